package kubernetes

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/weirhq/weir/internal/ha"
)

// TestManifests checks the manifests of this folder: every check below
// passes on them.
func TestManifests(t *testing.T) {
	files, err := readManifests(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range checkManifests(files) {
		t.Error(err)
	}
}

// TestBrokenManifests runs the checks on copies of the manifests with one
// file replaced by a broken copy from testdata/ (its first lines say which
// file it replaces and the error it must cause): each check refuses its
// mistake, so a check that stopped working fails here.
func TestBrokenManifests(t *testing.T) {
	good, err := readManifests(".")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no broken manifests in testdata/ (%v)", err)
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(c), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(c)
			if err != nil {
				t.Fatal(err)
			}
			replaces, want := header(data, "replaces"), header(data, "want")
			if _, ok := good[replaces]; !ok || want == "" {
				t.Fatalf("%s: want the lines '# replaces: <a manifest of this folder>' and '# want: <part of the error>', got %q and %q", c, replaces, want)
			}
			files := clone(good)
			files[replaces] = data
			errs := checkManifests(files)
			for _, err := range errs {
				t.Logf("refused: %v", err)
				if strings.Contains(err.Error(), want) {
					return
				}
			}
			t.Errorf("%s: no error contains %q (got %d errors)", c, want, len(errs))
		})
	}
}

// header is the value of the comment line "# key: value" of a broken copy.
func header(data []byte, key string) string {
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "# "+key+": "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func clone(m map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// readManifests reads the YAML files of dir by name.
func readManifests(dir string) (map[string][]byte, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		files[filepath.Base(n)] = data
	}
	if _, ok := files["kustomization.yaml"]; !ok {
		return nil, fmt.Errorf("no kustomization.yaml in %s", dir)
	}
	return files, nil
}

// kustomize renders dir with kubectl kustomize (offline), or skips the test
// when kubectl is missing.
func kustomize(t *testing.T, dir string) []byte {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH: what kustomize renders is not checked (TestManifests checks the files)")
	}
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	return out
}

// TestKustomizeRender checks what kubectl apply -k sends: the output of
// kubectl kustomize, for deploy/kubernetes and the one-node overlay
// deploy/kind, passes every check (deploy/kind's volume is ReadWriteOnce,
// which it shares on one node, and otherwise the same objects).
func TestKustomizeRender(t *testing.T) {
	base := kustomize(t, ".")
	for _, err := range checkManifests(map[string][]byte{"rendered": base}) {
		t.Errorf("kubectl kustomize deploy/kubernetes: %v", err)
	}
	// kustomization.yaml's image override reaches every container.
	files, err := readManifests(".")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := strict(files["kustomization.yaml"], &k); err != nil || len(k.Images) != 1 {
		t.Fatalf("kustomization.yaml: want one image override (%v)", err)
	}
	o, err := decode(map[string][]byte{"rendered": base})
	if err != nil {
		t.Fatal(err)
	}
	want := k.Images[0].NewName + ":" + k.Images[0].NewTag
	for _, w := range o.workloads() {
		for _, c := range w.tmpl.Spec.Containers {
			if c.Image != want {
				t.Errorf("kubectl kustomize deploy/kubernetes: %s container %s runs %s, want %s (kustomization.yaml's images)", w.where, c.Name, c.Image, want)
			}
		}
	}
	kind := kustomize(t, "../kind")
	o, err = decode(map[string][]byte{"rendered": kind})
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/kind: %v", err)
	}
	if len(o.claims) != 1 || !slices.Equal(o.claims[0].Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("deploy/kind: want its one claim ReadWriteOnce, got %d claims", len(o.claims))
	}
	if want := bytes.Replace(base, []byte("- ReadWriteMany"), []byte("- ReadWriteOnce"), 1); !bytes.Equal(kind, want) {
		t.Errorf("deploy/kind renders more than the base with a ReadWriteOnce volume:\n%s", kind)
	}
}

// kustomization is the part of kustomize's Kustomization these manifests
// use; any other field is refused, so a new one is added here on purpose.
type kustomization struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Resources  []string    `json:"resources"`
	Images     []kustImage `json:"images"`
}

// kustImage is an image override of kustomization.yaml.
type kustImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// objects are the decoded manifests, each with the file it came from.
type objects struct {
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	configMaps   []*corev1.ConfigMap
	claims       []*corev1.PersistentVolumeClaim
	accounts     []*corev1.ServiceAccount
	roles        []*rbacv1.Role
	bindings     []*rbacv1.RoleBinding
	budgets      []*policyv1.PodDisruptionBudget
	file         map[any]string
	kust         *kustomization // nil for kustomize's output
}

// where names an object for messages: its file, kind and name.
func (o *objects) where(obj any, kind, name string) string {
	return fmt.Sprintf("%s: %s %s", o.file[obj], kind, name)
}

// strict decodes YAML into v as the API server does under
// --validate=strict: field names case-sensitive, unknown and duplicate
// fields refused.
func strict(doc []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := k8sjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// documents splits a file into its YAML documents, leaving out those with
// comments only.
func documents(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(data), -1) {
		for _, line := range strings.Split(d, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				docs = append(docs, []byte(d))
				break
			}
		}
	}
	return docs
}

// decode decodes every manifest strictly into its Kubernetes type; a kind
// these manifests should not hold (a ClusterRole, say) is an error.
func decode(files map[string][]byte) (*objects, error) {
	o := &objects{file: map[any]string{}}
	if k, ok := files["kustomization.yaml"]; ok {
		o.kust = &kustomization{}
		if err := strict(k, o.kust); err != nil {
			return nil, fmt.Errorf("kustomization.yaml: %w", err)
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		if name == "kustomization.yaml" {
			continue
		}
		for i, doc := range documents(files[name]) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				errs = append(errs, fmt.Errorf("%s, document %d: %w", name, i+1, err))
				continue
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				v := &appsv1.Deployment{}
				o.deployments, obj = append(o.deployments, v), v
			case "apps/v1 StatefulSet":
				v := &appsv1.StatefulSet{}
				o.statefulSets, obj = append(o.statefulSets, v), v
			case "v1 Service":
				v := &corev1.Service{}
				o.services, obj = append(o.services, v), v
			case "v1 ConfigMap":
				v := &corev1.ConfigMap{}
				o.configMaps, obj = append(o.configMaps, v), v
			case "v1 PersistentVolumeClaim":
				v := &corev1.PersistentVolumeClaim{}
				o.claims, obj = append(o.claims, v), v
			case "v1 ServiceAccount":
				v := &corev1.ServiceAccount{}
				o.accounts, obj = append(o.accounts, v), v
			case "rbac.authorization.k8s.io/v1 Role":
				v := &rbacv1.Role{}
				o.roles, obj = append(o.roles, v), v
			case "rbac.authorization.k8s.io/v1 RoleBinding":
				v := &rbacv1.RoleBinding{}
				o.bindings, obj = append(o.bindings, v), v
			case "policy/v1 PodDisruptionBudget":
				v := &policyv1.PodDisruptionBudget{}
				o.budgets, obj = append(o.budgets, v), v
			default:
				errs = append(errs, fmt.Errorf("%s, document %d: %s %s is not a kind these manifests may hold (namespaced objects only: no cluster-wide RBAC)", name, i+1, tm.APIVersion, tm.Kind))
				continue
			}
			o.file[obj] = name
			if err := strict(doc, obj); err != nil {
				errs = append(errs, fmt.Errorf("%s, document %d (%s): %w", name, i+1, tm.Kind, err))
			}
		}
	}
	return o, errors.Join(errs...)
}

// checkManifests decodes files and runs every check on them.
func checkManifests(files map[string][]byte) []error {
	o, err := decode(files)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, check := range []func(*objects, map[string][]byte) []error{
		checkKustomization, checkNamespaceAgnostic, checkSelectors, checkServices, checkBudgets, checkRBAC,
		checkImages, checkPods, checkArgs,
	} {
		errs = append(errs, check(o, files)...)
	}
	return errs
}

// workload is a Deployment's or StatefulSet's pod template, named.
type workload struct {
	where string
	tmpl  *corev1.PodTemplateSpec
}

func (o *objects) workloads() []workload {
	var ws []workload
	for _, d := range o.deployments {
		ws = append(ws, workload{o.where(d, "Deployment", d.Name), &d.Spec.Template})
	}
	for _, s := range o.statefulSets {
		ws = append(ws, workload{o.where(s, "StatefulSet", s.Name), &s.Spec.Template})
	}
	return ws
}

// selecting are the workloads whose pods sel selects.
func (o *objects) selecting(sel labels.Selector) []workload {
	var out []workload
	for _, w := range o.workloads() {
		if sel.Matches(labels.Set(w.tmpl.Labels)) {
			out = append(out, w)
		}
	}
	return out
}

// checkKustomization: kustomize applies exactly the files of this folder,
// and its image override names the image the containers use.
func checkKustomization(o *objects, files map[string][]byte) []error {
	if o.kust == nil {
		return nil
	}
	var errs []error
	if o.kust.APIVersion != "kustomize.config.k8s.io/v1beta1" || o.kust.Kind != "Kustomization" {
		errs = append(errs, fmt.Errorf("kustomization.yaml: want apiVersion kustomize.config.k8s.io/v1beta1, kind Kustomization"))
	}
	for n := range files {
		if n != "kustomization.yaml" && !slices.Contains(o.kust.Resources, n) {
			errs = append(errs, fmt.Errorf("kustomization.yaml: %s is not listed in resources (kubectl apply -k would leave it out)", n))
		}
	}
	for _, r := range o.kust.Resources {
		if _, ok := files[r]; !ok {
			errs = append(errs, fmt.Errorf("kustomization.yaml: resource %s is not a file of this folder", r))
		}
	}
	return errs
}

// checkNamespaceAgnostic: no object names its namespace, so the manifests
// apply to whichever namespace the user chooses.
func checkNamespaceAgnostic(o *objects, _ map[string][]byte) []error {
	var errs []error
	for obj, file := range o.file {
		if m, ok := obj.(metav1.Object); ok && m.GetNamespace() != "" {
			errs = append(errs, fmt.Errorf("%s: %s names namespace %q: leave it to kubectl -n or kustomize's namespace", file, m.GetName(), m.GetNamespace()))
		}
	}
	for _, b := range o.bindings {
		for _, s := range b.Subjects {
			if s.Namespace != "" {
				errs = append(errs, fmt.Errorf("%s: subject %s names namespace %q", o.where(b, "RoleBinding", b.Name), s.Name, s.Namespace))
			}
		}
	}
	return errs
}

// checkSelectors: every Deployment and StatefulSet selects its own pods.
func checkSelectors(o *objects, _ map[string][]byte) []error {
	var errs []error
	check := func(where string, sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec) {
		s, err := metav1.LabelSelectorAsSelector(sel)
		switch {
		case sel == nil || err != nil || s.Empty():
			errs = append(errs, fmt.Errorf("%s: want a non-empty selector (%v)", where, err))
		case !s.Matches(labels.Set(tmpl.Labels)):
			errs = append(errs, fmt.Errorf("%s: selector %s does not match its pod template's labels %v", where, s, tmpl.Labels))
		}
	}
	for _, d := range o.deployments {
		check(o.where(d, "Deployment", d.Name), d.Spec.Selector, &d.Spec.Template)
	}
	for _, s := range o.statefulSets {
		check(o.where(s, "StatefulSet", s.Name), s.Spec.Selector, &s.Spec.Template)
		if !slices.ContainsFunc(o.services, func(svc *corev1.Service) bool {
			return svc.Name == s.Spec.ServiceName && svc.Spec.ClusterIP == corev1.ClusterIPNone &&
				labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(s.Spec.Template.Labels))
		}) {
			errs = append(errs, fmt.Errorf("%s: serviceName %q names no headless Service (clusterIP: None) selecting its pods", o.where(s, "StatefulSet", s.Name), s.Spec.ServiceName))
		}
	}
	return errs
}

// hasPort reports whether c has the container port p names (by name or
// number).
func hasPort(c *corev1.Container, p intstr.IntOrString) bool {
	return slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
		if p.Type == intstr.String {
			return cp.Name == p.StrVal
		}
		return cp.ContainerPort == p.IntVal
	})
}

// checkServices: each Service selects pods of these manifests, and each of
// its ports reaches a port the selected pods' containers declare.
func checkServices(o *objects, _ map[string][]byte) []error {
	var errs []error
	for _, svc := range o.services {
		where := o.where(svc, "Service", svc.Name)
		if len(svc.Spec.Selector) == 0 {
			errs = append(errs, fmt.Errorf("%s: no selector", where))
			continue
		}
		ws := o.selecting(labels.SelectorFromSet(svc.Spec.Selector))
		if len(ws) == 0 {
			errs = append(errs, fmt.Errorf("%s: selector %v selects no pods of these manifests", where, svc.Spec.Selector))
		}
		for _, p := range svc.Spec.Ports {
			target := p.TargetPort
			if target.Type == intstr.Int && target.IntVal == 0 {
				target = intstr.FromInt32(p.Port)
			}
			for _, w := range ws {
				if !slices.ContainsFunc(w.tmpl.Spec.Containers, func(c corev1.Container) bool { return hasPort(&c, target) }) {
					errs = append(errs, fmt.Errorf("%s: port %s targets %s, which no container of %s declares", where, p.Name, target.String(), w.where))
				}
			}
		}
	}
	return errs
}

// checkBudgets: each PodDisruptionBudget covers pods of these manifests.
func checkBudgets(o *objects, _ map[string][]byte) []error {
	var errs []error
	for _, b := range o.budgets {
		where := o.where(b, "PodDisruptionBudget", b.Name)
		s, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		switch {
		case b.Spec.Selector == nil || err != nil || s.Empty():
			errs = append(errs, fmt.Errorf("%s: want a non-empty selector (%v)", where, err))
		case len(o.selecting(s)) == 0:
			errs = append(errs, fmt.Errorf("%s: selector %s selects no pods of these manifests", where, s))
		}
	}
	return errs
}

// The grants the Kubernetes HA driver needs (internal/ha/kubeha): a Lease
// to elect on and ConfigMaps for the store, and nothing else.
var wantGrants = map[string][]string{
	"coordination.k8s.io/leases": {"create", "delete", "get", "list", "patch", "update", "watch"},
	"/configmaps":                {"create", "delete", "get", "list", "patch", "update", "watch"},
}

// checkRBAC: one Role grants exactly wantGrants, bound to the one
// ServiceAccount; the JobManagers run as it, and every other pod mounts no
// token.
func checkRBAC(o *objects, _ map[string][]byte) []error {
	var errs []error
	if len(o.roles) != 1 || len(o.accounts) != 1 || len(o.bindings) != 1 {
		return []error{fmt.Errorf("want one Role, one ServiceAccount and one RoleBinding, got %d, %d and %d", len(o.roles), len(o.accounts), len(o.bindings))}
	}
	role, sa, rb := o.roles[0], o.accounts[0], o.bindings[0]
	got := map[string][]string{}
	for _, r := range role.Rules {
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			errs = append(errs, fmt.Errorf("%s: a rule names nonResourceURLs or resourceNames", o.where(role, "Role", role.Name)))
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = append(got[g+"/"+res], r.Verbs...)
			}
		}
	}
	for k := range got {
		slices.Sort(got[k])
		got[k] = slices.Compact(got[k])
	}
	for k, verbs := range got {
		if want, ok := wantGrants[k]; !ok {
			errs = append(errs, fmt.Errorf("%s: grants %v on %s: the JobManagers need Leases and ConfigMaps only", o.where(role, "Role", role.Name), verbs, k))
		} else if !slices.Equal(verbs, want) {
			errs = append(errs, fmt.Errorf("%s: grants %v on %s, want exactly %v", o.where(role, "Role", role.Name), verbs, k, want))
		}
	}
	for k, want := range wantGrants {
		if _, ok := got[k]; !ok {
			errs = append(errs, fmt.Errorf("%s: does not grant %v on %s, which the Kubernetes HA driver needs", o.where(role, "Role", role.Name), want, k))
		}
	}
	if rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}) ||
		len(rb.Subjects) != 1 || rb.Subjects[0].Kind != rbacv1.ServiceAccountKind || rb.Subjects[0].Name != sa.Name {
		errs = append(errs, fmt.Errorf("%s: want Role %s bound to ServiceAccount %s alone, got %+v to %+v", o.where(rb, "RoleBinding", rb.Name), role.Name, sa.Name, rb.RoleRef, rb.Subjects))
	}
	for _, w := range o.workloads() {
		spec := &w.tmpl.Spec
		jm := slices.ContainsFunc(spec.Containers, func(c corev1.Container) bool { return len(c.Args) > 0 && c.Args[0] == "jobmanager" })
		switch {
		case jm && spec.ServiceAccountName != sa.Name:
			errs = append(errs, fmt.Errorf("%s: runs weir jobmanager as ServiceAccount %q, want %s (the one the Role is bound to)", w.where, spec.ServiceAccountName, sa.Name))
		case !jm && (spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken):
			errs = append(errs, fmt.Errorf("%s: uses no Kubernetes API, so want automountServiceAccountToken: false", w.where))
		}
	}
	return errs
}

// checkImages: every container runs the same image (every process of a
// cluster must run the same build of weir), the one kustomization.yaml's
// images override.
func checkImages(o *objects, _ map[string][]byte) []error {
	var errs []error
	seen := map[string]string{}
	for _, w := range o.workloads() {
		for _, c := range append(slices.Clone(w.tmpl.Spec.InitContainers), w.tmpl.Spec.Containers...) {
			seen[c.Image] = w.where + " container " + c.Name
		}
	}
	if len(seen) != 1 {
		errs = append(errs, fmt.Errorf("containers run %d images, want one (every process of a cluster runs the same build): %v", len(seen), seen))
	}
	for img, where := range seen {
		name, _, _ := strings.Cut(img, ":")
		if o.kust != nil && !slices.ContainsFunc(o.kust.Images, func(i kustImage) bool { return i.Name == name }) {
			errs = append(errs, fmt.Errorf("%s: image %s is not overridden by kustomization.yaml's images (name %q)", where, img, name))
		}
	}
	return errs
}

// checkPods: what the image expects of its pods (a non-root user, a
// read-only root file system with /tmp an emptyDir), volumes that exist,
// and probes on declared ports.
func checkPods(o *objects, _ map[string][]byte) []error {
	var errs []error
	claims := map[string]bool{}
	for _, c := range o.claims {
		claims[c.Name] = true
	}
	for _, w := range o.workloads() {
		spec := &w.tmpl.Spec
		// The image's user (internal/imagebuild, uid): the pods run as it, and
		// the shared volume is made writable for its group.
		if sc := spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != imageUID || sc.FSGroup == nil || *sc.FSGroup != imageUID {
			errs = append(errs, fmt.Errorf("%s: want runAsUser and fsGroup %d, the image's user", w.where, imageUID))
		}
		if spec.TerminationGracePeriodSeconds == nil {
			errs = append(errs, fmt.Errorf("%s: want terminationGracePeriodSeconds", w.where))
		}
		vols := map[string]corev1.Volume{}
		for _, v := range spec.Volumes {
			vols[v.Name] = v
			if v.PersistentVolumeClaim != nil && !claims[v.PersistentVolumeClaim.ClaimName] {
				errs = append(errs, fmt.Errorf("%s: volume %s claims %s, which is not a PersistentVolumeClaim of these manifests", w.where, v.Name, v.PersistentVolumeClaim.ClaimName))
			}
		}
		for _, c := range spec.Containers {
			where := w.where + " container " + c.Name
			nonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
			sc := c.SecurityContext
			if sc != nil && sc.RunAsNonRoot != nil {
				nonRoot = *sc.RunAsNonRoot
			}
			if !nonRoot {
				errs = append(errs, fmt.Errorf("%s: want runAsNonRoot: true", where))
			}
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				errs = append(errs, fmt.Errorf("%s: want readOnlyRootFilesystem: true and allowPrivilegeEscalation: false", where))
			}
			if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				errs = append(errs, fmt.Errorf("%s: want a memory request and limit (weir sizes its memory from the limit)", where))
			}
			tmp := false
			for _, m := range c.VolumeMounts {
				v, ok := vols[m.Name]
				if !ok {
					errs = append(errs, fmt.Errorf("%s: mounts volume %s, which the pod does not have", where, m.Name))
				}
				tmp = tmp || m.MountPath == "/tmp" && v.EmptyDir != nil
			}
			if !tmp {
				errs = append(errs, fmt.Errorf("%s: want an emptyDir at /tmp, the image's one writable place", where))
			}
			for name, p := range map[string]*corev1.Probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
				switch {
				case p == nil:
					errs = append(errs, fmt.Errorf("%s: want a %s", where, name))
				case p.TCPSocket != nil && !hasPort(&c, p.TCPSocket.Port), p.HTTPGet != nil && !hasPort(&c, p.HTTPGet.Port):
					errs = append(errs, fmt.Errorf("%s: %s asks a port the container does not declare", where, name))
				}
			}
		}
	}
	return errs
}

// imageUID is the user and group of the image scripts/image builds
// (internal/imagebuild's uid).
const imageUID = 65532

// Sample values of the downward API fields, as the kubelet would give them.
var downward = map[string]string{
	"metadata.name":      "weir-taskmanager-0",
	"metadata.namespace": "weir-test",
	"status.podIP":       "10.1.2.3",
}

var varRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand expands $(NAME) in s from env as the kubelet expands a container's
// args ($$ is a literal $); a reference to an undefined name is an error,
// since Kubernetes would pass it on literally.
func expand(s string, env map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		name := m[2 : len(m)-1]
		v, ok := env[name]
		if !ok {
			missing = append(missing, m)
			return m
		}
		return v
	})
	if missing != nil {
		return "", fmt.Errorf("%q references %v, which no env, envFrom ConfigMap or downward API field of the container defines (Kubernetes would pass it on literally)", s, missing)
	}
	return out, nil
}

// environment is a container's environment as the kubelet builds it.
func (o *objects) environment(c *corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			i := slices.IndexFunc(o.configMaps, func(cm *corev1.ConfigMap) bool { return cm.Name == from.ConfigMapRef.Name })
			if i < 0 {
				if from.ConfigMapRef.Optional == nil || !*from.ConfigMapRef.Optional {
					return nil, fmt.Errorf("envFrom names ConfigMap %s, which is not in these manifests", from.ConfigMapRef.Name)
				}
				continue
			}
			for k, v := range o.configMaps[i].Data {
				env[from.Prefix+k] = v
			}
		case from.SecretRef != nil:
			if from.SecretRef.Optional == nil || !*from.SecretRef.Optional {
				return nil, fmt.Errorf("envFrom needs Secret %s, which the user creates: make it optional", from.SecretRef.Name)
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			v, err := expand(e.Value, env)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			env[e.Name] = v
		case e.ValueFrom.FieldRef != nil:
			v, ok := downward[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				return nil, fmt.Errorf("env %s: downward API field %s is not one this check knows", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env[e.Name] = v
		default:
			return nil, fmt.Errorf("env %s: only values and downward API fields are checked here", e.Name)
		}
	}
	return env, nil
}

// The flags of `weir jobmanager` and `weir taskmanager` (internal/cli,
// cluster.go: jobManagerCommand and taskManagerCommand; `weir help
// jobmanager`), with a check of each value. internal/cli keeps its flag
// sets unexported, so they are listed here: a flag renamed there is renamed
// here. jobmanager's --advertised-address and --checkpoint-dir, and its HA
// -D settings, are those of issue 37 (docs/high-availability.md, decisions
// 2 and 6).
var commandFlags = map[string]map[string]func(string) error{
	"jobmanager": {
		"rpc-address": listenAddr, "rest-address": listenAddr, "advertised-address": host,
		"checkpoint-dir": storageURL, "log-level": logLevel, "cpuprofile": nonEmpty,
	},
	"taskmanager": {
		"jobmanager": dialAddr, "slots": slots, "id": nonEmpty, "state-dir": absPath,
		"data-address": listenAddr, "advertised-data-address": dialAddr,
		"process-memory": nonEmpty, "network-memory": nonEmpty, "heap-state-memory": nonEmpty,
		"log-level": logLevel, "cpuprofile": nonEmpty,
	},
}

// The -D settings each command reads besides the HA ones (which
// ha.ParseSettings checks): internal/cli's heartbeatSettings and
// userTimeoutSetting.
var commandSettings = map[string][]string{
	"jobmanager":  {"heartbeat.interval", "heartbeat.timeout"},
	"taskmanager": {"heartbeat.interval", "heartbeat.timeout", "taskmanager.network.tcp.user-timeout"},
}

func nonEmpty(v string) error {
	if v == "" {
		return errors.New("empty")
	}
	return nil
}

func listenAddr(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	return err
}

func dialAddr(v string) error {
	h, port, err := net.SplitHostPort(v)
	switch {
	case err != nil:
		return err
	case h == "" || port == "" || port == "0":
		return errors.New("want the host:port others dial (no empty host, no port 0)")
	}
	return nil
}

func host(v string) error {
	if v == "" || strings.ContainsAny(v, "/ ") {
		return errors.New("want a host name or address")
	}
	return nil
}

func absPath(v string) error {
	if !path.IsAbs(v) {
		return errors.New("want an absolute path")
	}
	return nil
}

func storageURL(v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return err
	case u.Scheme == "file" || u.Scheme == "s3" || u.Scheme == "" && path.IsAbs(v):
		return nil
	}
	return errors.New("want a directory every process shares (file:///dir or /dir) or s3://bucket/prefix")
}

func logLevel(v string) error {
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, v) {
		return errors.New("want debug, info, warn or error")
	}
	return nil
}

func slots(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1024 {
		return errors.New("want a number from 1 to 1024")
	}
	return nil
}

// command is a container's weir command, parsed.
type command struct {
	name     string
	flags    map[string]string
	settings map[string]string // -D
	c        *corev1.Container
	w        workload
}

// parseArgs parses a container's expanded args as weir would: a command,
// then --flag=value (or --flag value) and -Dkey=value (or -D key=value).
func parseArgs(args []string) (command, error) {
	if len(args) == 0 {
		return command{}, errors.New("no args: want jobmanager or taskmanager and its flags")
	}
	cmd := command{name: args[0], flags: map[string]string{}, settings: map[string]string{}}
	known, ok := commandFlags[cmd.name]
	if !ok {
		return cmd, fmt.Errorf("command %q: want jobmanager or taskmanager", cmd.name)
	}
	var errs []error
	for i := 1; i < len(args); i++ {
		a := args[i]
		if rest, ok := strings.CutPrefix(a, "-D"); ok {
			if rest == "" && i+1 < len(args) {
				i++
				rest = args[i]
			}
			k, v, ok := strings.Cut(rest, "=")
			if !ok || k == "" {
				errs = append(errs, fmt.Errorf("-D %q: want KEY=VALUE", rest))
			}
			cmd.settings[k] = v
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		check, ok := known[name]
		switch {
		case !strings.HasPrefix(a, "-"):
			errs = append(errs, fmt.Errorf("%q: %s takes no arguments, only flags", a, cmd.name))
			continue
		case !ok:
			errs = append(errs, fmt.Errorf("%s: weir %s has no such flag", a, cmd.name))
			continue
		case !hasValue && i+1 < len(args):
			i++
			value = args[i]
		}
		if err := check(value); err != nil {
			errs = append(errs, fmt.Errorf("--%s %q: %w", name, value, err))
		}
		cmd.flags[name] = value
	}
	haKV := map[string]string{}
	for k, v := range cmd.settings {
		switch {
		case strings.HasPrefix(k, "high-availability.") || k == "kubernetes.namespace":
			if cmd.name != "jobmanager" {
				errs = append(errs, fmt.Errorf("-D %s: a setting of the JobManagers only", k))
			}
			haKV[k] = v
		case slices.Contains(commandSettings[cmd.name], k):
			if d, err := time.ParseDuration(v); err != nil || d < 10*time.Millisecond {
				errs = append(errs, fmt.Errorf("-D %s=%s: want a duration such as 1s", k, v))
			}
		default:
			errs = append(errs, fmt.Errorf("-D %s: weir %s reads no such setting", k, cmd.name))
		}
	}
	if cmd.name == "jobmanager" {
		// The HA settings, checked by weir's own parser.
		if _, err := ha.ParseSettings(haKV); err != nil {
			errs = append(errs, err)
		}
	}
	return cmd, errors.Join(errs...)
}

// checkArgs: each container's args, once Kubernetes has expanded them, are
// a weir command with flags and settings weir accepts, and they fit the
// manifests: listen ports declared, TaskManagers pointed at a Service of the
// JobManagers' RPC port, checkpoints on a volume every pod mounts, and two
// JobManagers exactly when they elect a leader.
func checkArgs(o *objects, _ map[string][]byte) []error {
	var errs []error
	var cmds []command
	for _, w := range o.workloads() {
		for i := range w.tmpl.Spec.Containers {
			c := &w.tmpl.Spec.Containers[i]
			where := w.where + " container " + c.Name
			if len(c.Command) > 0 {
				errs = append(errs, fmt.Errorf("%s: sets command: leave the image's entrypoint (weir) and give args", where))
			}
			env, err := o.environment(c)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			args := make([]string, len(c.Args))
			for j, a := range c.Args {
				if args[j], err = expand(a, env); err != nil {
					errs = append(errs, fmt.Errorf("%s: args: %w", where, err))
				}
			}
			cmd, err := parseArgs(args)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
			}
			cmd.c, cmd.w = c, w
			cmds = append(cmds, cmd)
			for _, f := range []string{"rpc-address", "rest-address", "data-address"} {
				if v, ok := cmd.flags[f]; ok {
					_, port, _ := net.SplitHostPort(v)
					if n, err := strconv.Atoi(port); err != nil || !hasPort(c, intstr.FromInt(n)) {
						errs = append(errs, fmt.Errorf("%s: --%s %s listens on a port the container does not declare", where, f, v))
					}
				}
			}
		}
	}
	for _, d := range o.deployments {
		for _, cmd := range cmds {
			if cmd.w.tmpl != &d.Spec.Template || cmd.name != "jobmanager" {
				continue
			}
			s, _ := ha.ParseSettings(pick(cmd.settings))
			replicas := int32(1)
			if d.Spec.Replicas != nil {
				replicas = *d.Spec.Replicas
			}
			switch {
			case s.Enabled() && replicas < 2:
				errs = append(errs, fmt.Errorf("%s: %d replica with high-availability.type %s: want 2, a leader and a standby", cmd.w.where, replicas, s.Type))
			case !s.Enabled() && replicas != 1:
				errs = append(errs, fmt.Errorf("%s: %d JobManagers without high availability would each take TaskManagers: want 1, or set high-availability.type", cmd.w.where, replicas))
			}
		}
	}
	errs = append(errs, checkJobManagerAddress(o, cmds)...)
	errs = append(errs, checkCheckpointDir(o, cmds)...)
	return errs
}

// pick are the HA settings among -D settings.
func pick(settings map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range settings {
		if strings.HasPrefix(k, "high-availability.") || k == "kubernetes.namespace" {
			out[k] = v
		}
	}
	return out
}

// checkJobManagerAddress: a TaskManager's --jobmanager is a Service of
// these manifests whose port reaches the JobManagers' --rpc-address.
func checkJobManagerAddress(o *objects, cmds []command) []error {
	var errs []error
	for _, tm := range cmds {
		addr, ok := tm.flags["jobmanager"]
		if tm.name != "taskmanager" || !ok {
			continue
		}
		where := tm.w.where + " container " + tm.c.Name
		h, port, _ := net.SplitHostPort(addr)
		svcName, _, _ := strings.Cut(h, ".") // name, or name.namespace.svc...
		i := slices.IndexFunc(o.services, func(s *corev1.Service) bool { return s.Name == svcName })
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s: --jobmanager %s names no Service of these manifests", where, addr))
			continue
		}
		svc := o.services[i]
		pi := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port })
		if pi < 0 {
			errs = append(errs, fmt.Errorf("%s: --jobmanager %s: Service %s has no port %s", where, addr, svc.Name, port))
			continue
		}
		target := svc.Spec.Ports[pi].TargetPort
		reached := false
		for _, jm := range cmds {
			if jm.name != "jobmanager" || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(jm.w.tmpl.Labels)) {
				continue
			}
			_, rpcPort, _ := net.SplitHostPort(jm.flags["rpc-address"])
			for _, cp := range jm.c.Ports {
				if strconv.Itoa(int(cp.ContainerPort)) == rpcPort && (target.Type == intstr.String && target.StrVal == cp.Name || target.Type == intstr.Int && target.IntVal == cp.ContainerPort) {
					reached = true
				}
			}
		}
		if !reached {
			errs = append(errs, fmt.Errorf("%s: --jobmanager %s reaches no JobManager's --rpc-address through Service %s", where, addr, svc.Name))
		}
	}
	return errs
}

// checkCheckpointDir: a JobManager's --checkpoint-dir on a file system lies
// on a shared volume (a PersistentVolumeClaim of ReadWriteMany) that every
// weir container mounts at the same path; TaskManagers write there and
// JobManagers read.
func checkCheckpointDir(o *objects, cmds []command) []error {
	var errs []error
	for _, jm := range cmds {
		dir, ok := jm.flags["checkpoint-dir"]
		if jm.name != "jobmanager" || !ok || strings.HasPrefix(dir, "s3://") {
			continue
		}
		p := strings.TrimPrefix(dir, "file://")
		for _, c := range cmds {
			vols := map[string]corev1.Volume{}
			for _, v := range c.w.tmpl.Spec.Volumes {
				vols[v.Name] = v
			}
			shared := slices.ContainsFunc(c.c.VolumeMounts, func(m corev1.VolumeMount) bool {
				v := vols[m.Name]
				if v.PersistentVolumeClaim == nil || (p != m.MountPath && !strings.HasPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/")) {
					return false
				}
				return slices.ContainsFunc(o.claims, func(pvc *corev1.PersistentVolumeClaim) bool {
					return pvc.Name == v.PersistentVolumeClaim.ClaimName && slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany)
				})
			})
			if !shared {
				errs = append(errs, fmt.Errorf("%s container %s: --checkpoint-dir %s of %s is not on a ReadWriteMany volume this container mounts: every process must reach the checkpoints under the same path",
					c.w.where, c.c.Name, dir, jm.w.where))
			}
		}
	}
	return errs
}

// TestExpand pins the kubelet's expansion rules the checks rely on.
func TestExpand(t *testing.T) {
	env := map[string]string{"A": "x", "POD_IP": "10.0.0.1"}
	for in, want := range map[string]string{"--a=$(A)": "--a=x", "$(POD_IP):6121": "10.0.0.1:6121", "$$(A)": "$(A)", "plain": "plain"} {
		if got, err := expand(in, env); err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := expand("$(B)", env); err == nil || !strings.Contains(err.Error(), "$(B)") {
		t.Errorf("expand of an undefined name: got %v, want an error naming it", err)
	}
	if !bytes.Equal(documents([]byte("# only a comment\n---\na: 1\n"))[0], []byte("\na: 1\n")) {
		t.Errorf("documents: a comment-only document was kept")
	}
}
