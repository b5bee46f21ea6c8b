// Package instancepb is the gRPC service a room process serves to its
// host: the code generated from instance.proto, and the go-plugin
// handshake and plugin both sides agree on (plugin.go). Regenerate the
// .pb.go files with gen.sh (make proto); do not edit them by hand.
package instancepb
