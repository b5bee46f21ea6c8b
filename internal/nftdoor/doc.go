// Package nftdoor is the host's door for rooms whose game server owns its
// socket (the exec driver's foreign servers): a layer-4 filter in the
// kernel, one nftables table per lobby, that lets a datagram reach a
// room's UDP port only from an address holding a seat in that room.
//
// # Layout
//
// The table (family inet) is named by the lobby (Open) and holds:
//
//	chain input { type filter hook input priority filter; policy accept
//	    ct state established,related accept
//	    iifname "lo" ip saddr 127.0.0.1 accept     (and ::1, and any other
//	    iifname "lo" ip6 saddr ::1 accept           probe address given)
//	    meta l4proto udp udp dport vmap @rooms
//	}
//	map rooms { type inet_service : verdict }   port : jump room_<id>
//	chain room_<id> {
//	    ip saddr @room4_<id> accept
//	    ip6 saddr @room6_<id> accept
//	    counter drop
//	}
//	set room4_<id> { type ipv4_addr; flags timeout }
//	set room6_<id> { type ipv6_addr; flags timeout }
//
// Only datagrams to a room's port are judged: everything else leaves the
// chain with its policy, accept, for the host's own rules to decide. The
// verdict map finds the room of a port in one lookup however many rooms
// the lobby runs.
//
// # Seats
//
// Seats replaces a room's sets in one batch; each address is kept with a
// timeout equal to what is left of its seat, so the kernel forgets an
// expired seat by itself, whether or not the lobby says so in time.
//
// A flow the door let in stays in (ct state established): a player who
// came on a seat keeps playing after the seat is used up or has expired.
// Since such a flow would otherwise outlive its room, Room forgets every
// conntrack flow to a port when it shuts the door on it for a new room:
// the players of the room that had the port before are strangers to the
// next. Adopt, for a room that already ran, keeps them.
//
// # Probes
//
// A keeper asks its server for its status from loopback, from exactly
// 127.0.0.1 or ::1 (or the rooms' bind address when it is one of the
// host's own): datagrams from these addresses that come in over the
// loopback interface pass. Every other source, 127.0.0.2 included, needs
// a seat. Local processes are not kept out by the door: they reach a
// room from 127.0.0.1 as the probes do.
//
// # Lifetime
//
// The table's name is fixed for a lobby that keeps its rooms across
// restarts (a state directory), so that a lobby started again, or the
// new process of an upgrade, opens the same table and finds the rooms
// that still run in it (Rooms); it keeps what it adopts (Adopt) and
// drops the rest (Reconcile). Release lets go of the table for such a
// successor; Remove deletes it, for a lobby whose rooms have all ended.
//
// # What the host needs
//
// CAP_NET_ADMIN (root) and nf_tables with the inet family (Linux 3.14,
// set timeouts), conntrack for the established flows. Open's error wraps
// ErrUnavailable and says what is missing.
package nftdoor
