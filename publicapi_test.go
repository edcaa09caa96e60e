package weir_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// What users implement and call must be usable from another module: no
// exported declaration of a public package may name a type of an internal
// package (a program outside the module cannot import it). The test reads
// every public package's exported functions, methods, types, struct fields,
// interface methods, variables and constants, and reports each reference to
// an internal package in them.
func TestPublicAPINamesNoInternalTypes(t *testing.T) {
	var dirs []string
	filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		base := filepath.Base(path)
		if base == "internal" || base == "testdata" || (strings.HasPrefix(base, ".") && path != ".") || base == "examples" || base == "cmd" || base == "bench" {
			return filepath.SkipDir
		}
		dirs = append(dirs, path)
		return nil
	})
	checked := 0
	for _, dir := range dirs {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			if pkg.Name == "main" {
				continue
			}
			for name, f := range pkg.Files {
				checked++
				for _, v := range internalRefs(f) {
					t.Errorf("%s:%d: exported %s names %s (internal)", name, fset.Position(v.pos).Line, v.decl, v.ref)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d files; the walk is broken", checked)
	}
}

type ref struct {
	pos       token.Pos
	decl, ref string
}

// internalRefs lists the references to internal packages in the exported
// declarations of f.
func internalRefs(f *ast.File) []ref {
	internal := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(path, "/internal/") {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		internal[name] = path
	}
	if len(internal) == 0 {
		return nil
	}
	var out []ref
	scan := func(decl string, n ast.Node) {
		if n == nil || reflect.ValueOf(n).IsNil() {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncLit, *ast.BlockStmt:
				return false // bodies are not the API
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					if path, ok := internal[id.Name]; ok {
						out = append(out, ref{x.Pos(), decl, path + "." + x.Sel.Name})
					}
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
				continue
			}
			scan("func "+d.Name.Name, d.Type)
			if d.Recv != nil {
				scan("method "+d.Name.Name, d.Recv)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					scan("type "+s.Name.Name, s.TypeParams)
					scanType("type "+s.Name.Name, s.Type, scan)
				case *ast.ValueSpec:
					// A value's type is API; its initializer (a constant
					// defined from an internal one, say) is not.
					for _, n := range s.Names {
						if n.IsExported() {
							scan("value "+n.Name, s.Type)
						}
					}
				}
			}
		}
	}
	return out
}

// scanType scans a type's exported parts: all of it, except unexported
// struct fields and interface methods.
func scanType(decl string, t ast.Expr, scan func(string, ast.Node)) {
	switch t := t.(type) {
	case *ast.StructType:
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 || f.Names[0].IsExported() {
				scan(decl, f.Type)
			}
		}
	case *ast.InterfaceType:
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 || m.Names[0].IsExported() {
				scan(decl, m.Type)
			}
		}
	default:
		scan(decl, t)
	}
}

func exportedRecv(fl *ast.FieldList) bool {
	t := fl.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return true
		}
	}
}
