#!/usr/bin/env bash
# gen.sh regenerates the Go code for instance.proto with pinned tools:
# Debian's protoc (package protobuf-compiler) and the two Go plugins below,
# installed into a temporary GOBIN so nothing on the machine changes.
set -euo pipefail

PROTOC_WANT="libprotoc 3.21.12"
PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.1

cd "$(dirname "$0")"

if ! command -v protoc >/dev/null; then
	echo "gen.sh: protoc not found; install Debian's protobuf-compiler ($PROTOC_WANT)" >&2
	exit 1
fi
have=$(protoc --version)
if [ "$have" != "$PROTOC_WANT" ]; then
	echo "gen.sh: protoc is \"$have\", want \"$PROTOC_WANT\" (Debian's protobuf-compiler);" \
		"the generated headers would differ" >&2
	exit 1
fi

gobin=$(mktemp -d)
trap 'rm -rf "$gobin"' EXIT
GOBIN=$gobin go install "$PROTOC_GEN_GO"
GOBIN=$gobin go install "$PROTOC_GEN_GO_GRPC"

PATH="$gobin:$PATH" protoc -I . \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	instance.proto
echo "gen.sh: regenerated instance.pb.go and instance_grpc.pb.go"
