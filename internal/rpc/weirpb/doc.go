// Package weirpb holds the Go code protoc generates from
// proto/weir/cluster/v1/cluster.proto (scripts/gen-proto; never edit it by
// hand): the Envelope of every control message, Register's request and
// reply, and in weirpbconnect the Connect client and handler of
// JobManagerService. cluster.proto.sha256 is the .proto the code was
// generated from; the tests fail when the .proto changed since.
package weirpb
