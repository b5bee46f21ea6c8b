// Package host is the supervisor's side of an instance: it starts a room
// process with [Launch], runs the hashicorp/go-plugin handshake with it
// (gRPC over a unix socket), hands it its room with [Process.Start],
// receives the status the instance pushes ([Process.Status]), and stops or
// kills it.
//
// It is built to survive a careless process: the process runs in its own
// process group with a parent-death signal, nothing it writes to stdout or
// stderr can crash or stall the host (go-plugin never parses its stderr),
// and it is reaped whatever it does. The game's side is package instance,
// which a game imports without linking this one.
package host
