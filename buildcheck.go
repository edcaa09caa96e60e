package weir

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	"github.com/weirhq/weir/state"
)

// Build-time checks of user functions. A method named like one of the
// optional interfaces an operator calls on its function (Open, Close,
// OnTimer, Finish, SnapshotState, NotifyCheckpointComplete) but with
// another signature compiles, and is then never called: no timer fires and
// nothing says why. Each operator's constructor inspects its function once,
// by reflection, when the job is declared, and the state descriptors held
// in its fields (a nil codec with no derived one); Execute reports the
// first mistake before any task runs.

// hookSet lists the optional interfaces an operator calls on its function.
type hookSet []reflect.Type

// lifecycleHooks are the interfaces every operator with fnHooks calls.
func lifecycleHooks() hookSet {
	return hookSet{reflect.TypeFor[Opener](), reflect.TypeFor[Closer](),
		reflect.TypeFor[CheckpointedFunction](), reflect.TypeFor[CheckpointListener]()}
}

// processHooks: Process and CoProcess.
func processHooks[U any]() hookSet {
	return append(lifecycleHooks(), reflect.TypeFor[Finisher[U]]())
}

// keyedProcessHooks: ProcessKeyed and KeyedCoProcess (Open may take the
// keyed runtime context, and timers fire into OnTimer).
func keyedProcessHooks[K comparable, U any]() hookSet {
	return append(processHooks[U](), reflect.TypeFor[KeyedOpener](), reflect.TypeFor[TimerFunction[K, U]]())
}

// windowHooks: the process functions of windows.
func windowHooks() hookSet {
	return append(lifecycleHooks(), reflect.TypeFor[KeyedOpener]())
}

// openCloseHooks: functions that are only opened and closed (joins).
func openCloseHooks() hookSet {
	return hookSet{reflect.TypeFor[Opener](), reflect.TypeFor[Closer]()}
}

// checkHooks records in env (for Execute) the first method of fn that is
// named like a method of hooks but implements none of them. op names the
// transformation.
func checkHooks(env *Environment, op string, fn any, hooks hookSet) {
	if err := hookMismatch(op, fn, hooks); err != nil {
		env.fail(err)
	}
	if err := descriptorMistake(op, fn); err != nil {
		env.fail(err)
	}
}

// descriptorMistake is the first error of the state descriptors held in
// fn's fields (Flink's habit: a descriptor per field), checked by their
// Validate: a nil codec that codec.For cannot derive fails here, before any
// task runs, rather than when the state is first declared.
func descriptorMistake(op string, fn any) error {
	v := reflect.ValueOf(fn)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	c := reflect.New(v.Type()).Elem() // addressable, so unexported fields can be read
	c.Set(v)
	for i := range c.NumField() {
		f := c.Field(i)
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				continue
			}
			f = f.Elem()
		}
		if f.Type().PkgPath() != statePkg || !f.CanAddr() {
			continue
		}
		d, ok := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Interface().(interface{ Validate() error })
		if !ok {
			continue
		}
		if err := d.Validate(); err != nil {
			return fmt.Errorf("weir: %s: %s.%s: %w", op, typeName(v.Type()), v.Type().Field(i).Name, err)
		}
	}
	return nil
}

var statePkg = reflect.TypeFor[state.TTLConfig]().PkgPath()

func hookMismatch(op string, fn any, hooks hookSet) error {
	t := reflect.TypeOf(fn)
	if t == nil {
		return nil
	}
	want := map[string][]hookSig{}
	for _, h := range hooks {
		for i := range h.NumMethod() {
			m := h.Method(i)
			want[m.Name] = append(want[m.Name], hookSig{h, m.Type})
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sigs := want[name]
		m, ok := t.MethodByName(name)
		if !ok {
			if t.Kind() != reflect.Pointer {
				if pm, ok := reflect.PointerTo(t).MethodByName(name); ok && matchesHook(withoutReceiver(pm.Type), sigs) {
					return fmt.Errorf("weir: %s: %s.%s has a pointer receiver but the function is passed by value, so it would never be called; pass a pointer (&%s{...})",
						op, typeName(t), name, typeName(t))
				}
			}
			continue
		}
		if got := withoutReceiver(m.Type); !matchesHook(got, sigs) {
			return fmt.Errorf("weir: %s: %s.%s has signature %s, want %s, so it would never be called; change it to that signature (or rename the method)",
				op, typeName(t), name, got, wantSigs(sigs))
		}
	}
	return nil
}

// hookSig is one acceptable signature of a hook method and its interface.
type hookSig struct {
	iface reflect.Type
	fn    reflect.Type // without receiver
}

func matchesHook(got reflect.Type, sigs []hookSig) bool {
	for _, s := range sigs {
		if got == s.fn {
			return true
		}
	}
	return false
}

func wantSigs(sigs []hookSig) string {
	out := make([]string, len(sigs))
	for i, s := range sigs {
		out[i] = fmt.Sprintf("%s (%s)", s.fn, s.iface)
	}
	return strings.Join(out, " or ")
}

// withoutReceiver is the type of method type m (receiver first) as its
// interface declares it.
func withoutReceiver(m reflect.Type) reflect.Type {
	in := make([]reflect.Type, m.NumIn()-1)
	for i := range in {
		in[i] = m.In(i + 1)
	}
	out := make([]reflect.Type, m.NumOut())
	for i := range out {
		out[i] = m.Out(i)
	}
	return reflect.FuncOf(in, out, m.IsVariadic())
}

// typeName is the user's name of t: without the pointer and package.
func typeName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() != "" {
		return t.Name()
	}
	return t.String()
}
