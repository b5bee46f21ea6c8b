package instance

import (
	"context"

	instancepb "github.com/foyerlobby/foyer/instance/proto"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the version of the instance service both sides
// announce in the go-plugin handshake; a host and an instance that differ
// refuse each other at launch rather than misunderstand each other later.
const ProtocolVersion = 1

// handshake is what host and instance must agree on. The cookie only tells
// a process that it was started by a Foyer host; it is no security.
var handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "FOYER_INSTANCE_COOKIE",
	MagicCookieValue: "d0b8a4a6-room-7c1f",
}

// pluginName is the one plugin an instance serves.
const pluginName = "room"

// roomPlugin binds the instance service to go-plugin. The host side leaves
// server nil; the instance side leaves nothing unset.
type roomPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	server instancepb.InstanceServer
}

func (p *roomPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	instancepb.RegisterInstanceServer(s, p.server)
	return nil
}

func (p *roomPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return instancepb.NewInstanceClient(c), nil
}
