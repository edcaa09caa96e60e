// Package kubetest gives tests a real Kubernetes API server: kube-apiserver
// and the etcd it stores into, built from their Go modules by
// scripts/kube-apiserver into .cache/kube-apiserver/bin, run as processes on
// free loopback ports. There is no kubelet and no controller manager: the
// server stores and validates objects, authenticates and authorizes
// (RBAC), and issues ServiceAccount tokens (TokenRequest); nothing runs pods.
//
// Start starts one server per test binary on its first call (starting
// costs seconds) and returns it to every later call; a test binary that uses
// it should call Main from its TestMain, which stops both processes and
// removes their folder when the tests end. Should the test binary die
// another way, the kernel kills both processes with it (Pdeathsig).
//
// The server serves HTTPS on 127.0.0.1 with a self-signed certificate
// (CAFile), authenticates a static admin token (AdminToken, group
// system:masters) and ServiceAccount tokens signed by its own key, and
// authorizes with RBAC and the Node authorizer; Kubeconfig is an admin
// kubeconfig file for kubectl.
//
// When the binaries are not built, Start fails the test under CI (CI set,
// and not "false" or "0") and skips it elsewhere, naming the command that
// builds them (scripts/kube-apiserver build; scripts/test runs it under CI).
// WEIR_KUBE_CACHE, when set, is the folder of the binaries instead of
// .cache/kube-apiserver (its bin/), for the script and Start alike.
package kubetest
