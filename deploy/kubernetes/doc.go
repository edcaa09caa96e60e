// Package kubernetes holds what a user deploys to Kubernetes: the manifests
// of this folder (kubectl apply -k deploy/kubernetes; docs/kubernetes.md)
// and their offline check.
//
// The package has no code: its test decodes every manifest strictly into the
// real Kubernetes types (k8s.io/api; unknown, misspelled and duplicate fields
// are errors, as for kubectl apply --validate=strict) and checks what the API
// server cannot: selectors match their pod templates, Services and probes name
// ports the containers have, the Role grants Leases and ConfigMaps and
// nothing else, one image everywhere, and the pods' args are flags and
// settings that `weir` accepts once Kubernetes has expanded their $(VAR)
// references. Its Kubernetes dependencies are imported by the test only, so
// the weir binary does not link them. testdata/ holds broken copies of the
// manifests, one mistake each, that the test must refuse.
package kubernetes
