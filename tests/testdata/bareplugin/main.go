// Command bareplugin is the least a room written with go-plugin can be: a
// gRPC plugin server of Foyer's handshake that serves nothing. It is for
// BenchmarkRoomBoot, which measures how long such a program takes to
// start, beside foyer-room.
package main

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/foyerlobby/foyer/instance/instancepb"
)

// nothing is a gRPC plugin with no service.
type nothing struct{ plugin.NetRPCUnsupportedPlugin }

func (nothing) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }

func (nothing) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: instancepb.Handshake,
		Plugins:         plugin.PluginSet{instancepb.PluginName: nothing{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
