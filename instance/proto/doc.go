// Package instancepb is the generated code for instance.proto, the gRPC
// service a room process serves to its host. Regenerate it with gen.sh
// (make proto); do not edit the .pb.go files by hand.
package instancepb
