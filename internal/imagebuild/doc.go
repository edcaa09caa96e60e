// Command imagebuild writes the container image of weir without a Docker
// daemon: one layer holding a static weir binary (and the few files a
// non-root process expects), written as a tarball that `docker load`,
// `kind load image-archive` and `crane push` accept. scripts/image builds the
// binary and runs it; docs/kubernetes.md says how to use the image.
//
// It is a program of its own (go run ./internal/imagebuild) so that the weir
// binary does not link go-containerregistry.
//
// What the image promises the manifests of deploy/kubernetes: entrypoint
// /usr/local/bin/weir (also on PATH, for kubectl exec ... -- weir), user and
// group 65532, /tmp the one place it writes (declared a volume: an emptyDir
// in Kubernetes, so the root file system can be read-only), working
// directory /tmp. The layer's files carry one fixed time (SOURCE_DATE_EPOCH),
// so the same binary gives the same image digest.
package main
