package instancepb

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the version of the instance service both sides
// announce in the go-plugin handshake; a host and an instance that differ
// refuse each other at launch rather than misunderstand each other later.
const ProtocolVersion = 1

// Handshake is what host and instance must agree on. The cookie only tells
// a process that it was started by a Foyer host; it is no security.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "FOYER_INSTANCE_COOKIE",
	MagicCookieValue: "d0b8a4a6-room-7c1f",
}

// PluginName is the one plugin an instance serves.
const PluginName = "room"

// Sizes of the gRPC connection between a host and an instance, set on both
// sides. Every message is a few dozen bytes and a host keeps one
// connection per room, so the buffers are small; a fixed flow-control
// window of MaxMessage turns off gRPC's bandwidth probe, whose pings would
// wake the host for every heartbeat of every room.
const (
	// ConnBuffer is the size of each read and write buffer.
	ConnBuffer = 4 << 10
	// MaxMessage bounds a message, on every call.
	MaxMessage = 64 << 10
)

// Plugin binds the instance service to go-plugin. The host leaves Impl
// nil; the instance sets it to its service.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl InstanceServer
}

// GRPCServer registers the instance's service.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	RegisterInstanceServer(s, p.Impl)
	return nil
}

// GRPCClient returns the host's client of the service.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return NewInstanceClient(c), nil
}

// The environment a host gives an instance that is to outlive the host:
// with EnvReattachGrace set, the instance keeps playing while no host
// watches it, for that long (a Go duration), waiting for a new host to
// adopt it; without it, the instance ends with its host.
const (
	// EnvRoomDir names the room's private directory: the instance's
	// socket is there (go-plugin's PLUGIN_UNIX_SOCKET_DIR points at it),
	// and its log once no host reads its stderr (room.log).
	EnvRoomDir = "FOYER_ROOM_DIR"
	// EnvReattachGrace is how long an instance without a host keeps
	// playing before it ends its match and exits.
	EnvReattachGrace = "FOYER_REATTACH_GRACE"
	// EnvRoomCgroup names the cgroups the host started the instance in,
	// "TREE/ROOM" (see package internal/cgroup); absent when the host
	// runs rooms without cgroups. An instance that ends its room without
	// a host (its grace ran out, or its host died) kills every other
	// process there and removes them.
	EnvRoomCgroup = "FOYER_ROOM_CGROUP"
	// EnvRoomSocket is the number of a descriptor the instance inherits:
	// the room's UDP socket, which the host bound before it started the
	// instance, so that a client it sent to the room's port while the
	// instance starts finds its datagrams waiting there. The instance
	// serves its game on it when Start names its port (and address), and
	// binds nothing; absent when the instance binds its port itself.
	EnvRoomSocket = "FOYER_ROOM_SOCKET"
)

// RoomLog is the name of the file in the room's directory an orphaned
// instance logs to.
const RoomLog = "room.log"
