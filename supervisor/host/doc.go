// Package host is the supervisor's side of an instance: it starts a room
// process with [Launch], runs the hashicorp/go-plugin handshake with it
// (gRPC over a unix socket), hands it its room with [Process.Start],
// receives the status the instance pushes ([Process.Status]), and stops or
// kills it. [Attach] takes over an instance another host (or this one,
// before a restart) launched to outlive it: the same Process, known by a
// pidfd rather than as a child.
//
// It is built to survive a careless process: the process runs in its own
// process group, with a parent-death signal unless it is to outlive the
// host, nothing it writes to stdout or stderr can crash or stall the host
// (go-plugin never parses its stderr), and it is reaped whatever it does.
// A process that prints something else than the handshake is reported
// with what it printed (ErrNotAnInstance). The game's side is package
// instance, which a game imports without linking this one.
package host
