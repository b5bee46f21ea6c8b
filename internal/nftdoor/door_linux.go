//go:build linux

package nftdoor

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Names inside the table.
const (
	inputChain = "input"
	portMap    = "rooms"
)

func roomChain(id uint32) string { return "room_" + strconv.FormatUint(uint64(id), 10) }
func set4(id uint32) string      { return "room4_" + strconv.FormatUint(uint64(id), 10) }
func set6(id uint32) string      { return "room6_" + strconv.FormatUint(uint64(id), 10) }

// Door is one lobby's table. Its methods are safe for concurrent use;
// each sends one netlink batch, which the kernel applies whole or not at
// all, so a packet sees a room's door either before or after a change.
type Door struct {
	name   string
	table  *nftables.Table
	probes []netip.Addr

	mu    sync.Mutex
	conn  *nftables.Conn // lasting, in the netns Open ran in
	ctMu  sync.Mutex     // one conntrack walk at a time, off mu
	ct    *netlink.Conn  // conntrack, same netns
	ports *nftables.Set  // the port map
	rooms map[uint32]uint16
	err   error // set once the door is closed, or cannot be trusted
}

// Open opens the lobby's table name, making it or taking it as a
// previous process left it (its rooms are in Rooms until Reconcile), in
// the network namespace of the calling thread. Datagrams from 127.0.0.1,
// ::1 and the probes addresses that reach the host over loopback pass
// every room's door. An error wraps ErrUnavailable when the host keeps
// no door.
func Open(name string, probes ...netip.Addr) (*Door, error) {
	if name == "" || len(name) > 200 {
		return nil, fmt.Errorf("nftdoor: table name %q", name)
	}
	// Both sockets belong to the namespace of the thread that opens
	// them, for good: the door never dials again.
	runtime.LockOSThread()
	conn, err := nftables.New(nftables.AsLasting())
	var ct *netlink.Conn
	if err == nil {
		ct, err = netlink.Dial(unix.NETLINK_NETFILTER, nil)
		if err != nil {
			conn.CloseLasting()
		}
	}
	runtime.UnlockOSThread()
	if err != nil {
		return nil, unavailable(err)
	}
	d := &Door{
		name:   name,
		table:  &nftables.Table{Name: name, Family: nftables.TableFamilyINet},
		probes: probes,
		conn:   conn,
		ct:     ct,
		rooms:  make(map[uint32]uint16),
	}
	if err := d.base(probes); err != nil {
		d.closeConns()
		return nil, unavailable(err)
	}
	if err := d.load(); err != nil {
		d.closeConns()
		return nil, fmt.Errorf("nftdoor: reading table %s: %w", name, err)
	}
	return d, nil
}

// unavailable says why the host keeps no door, wrapping ErrUnavailable.
func unavailable(err error) error {
	var why string
	switch {
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		why = "no CAP_NET_ADMIN"
		if os.Geteuid() != 0 {
			why = "not root (no CAP_NET_ADMIN)"
		}
	case errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.EAFNOSUPPORT) ||
		errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP):
		why = "no nf_tables (inet family, sets with timeouts, conntrack)"
	default:
		why = "nf_tables refused the table"
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, why, err)
}

// base makes the table, its input chain and its port map, and writes the
// input chain's rules anew (a table left by an older lobby gets this
// one's), in one batch: rooms already in the table are judged throughout.
func (d *Door) base(probes []netip.Addr) error {
	c := d.conn
	c.AddTable(d.table)
	input := &nftables.Chain{
		Name: inputChain, Table: d.table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter,
		Policy: ref(nftables.ChainPolicyAccept),
	}
	c.AddChain(input)
	c.FlushChain(input)
	d.ports = &nftables.Set{Table: d.table, Name: portMap, IsMap: true,
		KeyType: nftables.TypeInetService, DataType: nftables.TypeVerdict}
	if err := c.AddSet(d.ports, nil); err != nil {
		return err
	}
	// A flow once let in stays in, whatever became of its seat.
	c.AddRule(&nftables.Rule{Table: d.table, Chain: input, Exprs: []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:  binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Verdict{Kind: expr.VerdictAccept},
	}})
	exempt := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	for _, a := range probes {
		if a = a.Unmap().WithZone(""); a.IsValid() && !a.IsUnspecified() && !slices.Contains(exempt, a) {
			exempt = append(exempt, a)
		}
	}
	for _, a := range exempt {
		ex := []expr.Any{
			&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname("lo")},
		}
		ex = append(ex, saddr(a)...)
		ex = append(ex, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a.AsSlice()},
			&expr.Verdict{Kind: expr.VerdictAccept})
		c.AddRule(&nftables.Rule{Table: d.table, Chain: input, Exprs: ex})
	}
	c.AddRule(&nftables.Rule{Table: d.table, Chain: input, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Lookup{SourceRegister: 1, DestRegister: 0, IsDestRegSet: true, SetName: d.ports.Name, SetID: d.ports.ID},
	}})
	return c.Flush()
}

// load reads the rooms a previous process left in the table.
func (d *Door) load() error {
	sets, err := d.conn.GetSets(d.table)
	if err != nil {
		return err
	}
	for _, s := range sets {
		if id, ok := idOf(s.Name, "room4_"); ok {
			d.rooms[id] = 0
		}
	}
	elems, err := d.conn.GetSetElements(d.ports)
	if err != nil {
		return err
	}
	for _, e := range elems {
		id, err := strconv.ParseUint(e.Comment, 10, 32)
		if _, ok := d.rooms[uint32(id)]; err != nil || !ok || len(e.Key) != 2 {
			continue
		}
		d.rooms[uint32(id)] = binaryutil.BigEndian.Uint16(e.Key)
	}
	return nil
}

// idOf parses the room id of a name made with prefix.
func idOf(name, prefix string) (uint32, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 32)
	return uint32(id), err == nil && id != 0
}

// Name is the table's name.
func (d *Door) Name() string { return d.name }

// Rooms returns the rooms in the table, by id, with their ports (0 for a
// room that has lost its port to another).
func (d *Door) Rooms() map[uint32]uint16 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[uint32]uint16, len(d.rooms))
	for id, port := range d.rooms {
		out[id] = port
	}
	return out
}

// Room shuts the door of new room id on its UDP port: from now on only
// its seats (Seats) pass. Every conntrack flow to the port is forgotten,
// so no player of a room that had the port before comes in on an
// established flow. A room that held the port before loses it; room id,
// if it had another port, leaves that one.
func (d *Door) Room(id uint32, port uint16) error {
	if err := d.put(id, port); err != nil {
		return err
	}
	if err := d.forget(port); err != nil {
		return fmt.Errorf("nftdoor: room %d: the flows to port %d are not forgotten: %w", id, port, err)
	}
	return nil
}

// Adopt is Room for a room that already ran, whose players' flows are
// kept: for the rooms a lobby adopts.
func (d *Door) Adopt(id uint32, port uint16) error { return d.put(id, port) }

func (d *Door) put(id uint32, port uint16) error {
	if id == 0 || port == 0 {
		return fmt.Errorf("nftdoor: room %d on port %d", id, port)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	err := d.apply(func() (bool, error) { return true, d.queueRoom(id, port) })
	if err != nil {
		return fmt.Errorf("nftdoor: room %d on port %d: %w", id, port, err)
	}
	d.placed(id, port)
	return nil
}

// apply sends the batch queue makes (if it says there is one) and
// returns the kernel's answer. A batch refused because the table is not
// as the door knew it (another process of the lobby changed it, during a
// handover, or someone else removed what the door had made) is queued
// again once on the table as read anew. d.mu is held.
func (d *Door) apply(queue func() (bool, error)) error {
	for try := 0; ; try++ {
		send, err := queue()
		if err != nil {
			return d.broken(err)
		}
		if !send {
			return nil
		}
		err = d.conn.Flush()
		if err == nil || try > 0 || !stale(err) {
			return err
		}
		if rerr := d.reload(); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
}

// stale reports whether err is the kernel's saying that something the
// batch names is missing, or there already.
func stale(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EEXIST) || errors.Is(err, unix.EBUSY)
}

// reload reads the rooms of the table anew, making the table again if it
// is gone. d.mu is held.
func (d *Door) reload() error {
	d.rooms = make(map[uint32]uint16)
	_, err := d.conn.ListTableOfFamily(d.name, nftables.TableFamilyINet)
	if errors.Is(err, unix.ENOENT) {
		err = d.base(d.probes)
	}
	if err != nil {
		return err
	}
	return d.load()
}

// queueRoom queues what puts room id on port: its sets, its chain with
// its rules anew, and the port's entry in the map. d.mu is held.
func (d *Door) queueRoom(id uint32, port uint16) error {
	c := d.conn
	s4, s6 := d.sets(id)
	if err := c.AddSet(s4, nil); err != nil {
		return err
	}
	if err := c.AddSet(s6, nil); err != nil {
		return err
	}
	ch := &nftables.Chain{Name: roomChain(id), Table: d.table}
	c.AddChain(ch)
	c.FlushChain(ch)
	for _, s := range []*nftables.Set{s4, s6} {
		ex := saddr(netip.IPv4Unspecified())
		if s == s6 {
			ex = saddr(netip.IPv6Unspecified())
		}
		ex = append(ex, &expr.Lookup{SourceRegister: 1, SetName: s.Name, SetID: s.ID},
			&expr.Verdict{Kind: expr.VerdictAccept})
		c.AddRule(&nftables.Rule{Table: d.table, Chain: ch, Exprs: ex})
	}
	c.AddRule(&nftables.Rule{Table: d.table, Chain: ch, Exprs: []expr.Any{
		&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop},
	}})
	old, had := d.rooms[id]
	if had && old == port {
		return nil // its entry is there
	}
	var gone []nftables.SetElement
	if had && old != 0 {
		gone = append(gone, portKey(old))
	}
	if other := d.holder(port); other != 0 {
		gone = append(gone, portKey(port))
	}
	if len(gone) > 0 {
		if err := c.SetDeleteElements(d.ports, gone); err != nil {
			return err
		}
	}
	e := portKey(port)
	e.VerdictData = &expr.Verdict{Kind: expr.VerdictJump, Chain: ch.Name}
	e.Comment = strconv.FormatUint(uint64(id), 10)
	return c.SetAddElements(d.ports, []nftables.SetElement{e})
}

// placed records that room id is on port. d.mu is held.
func (d *Door) placed(id uint32, port uint16) {
	if other := d.holder(port); other != 0 && other != id {
		d.rooms[other] = 0
	}
	d.rooms[id] = port
}

// holder is the room on port, or 0. d.mu is held.
func (d *Door) holder(port uint16) uint32 {
	for id, p := range d.rooms {
		if p == port {
			return id
		}
	}
	return 0
}

// Seats sets who passes room id's door: the addresses of seats, each
// until its seat expires (the kernel forgets it then). Seats already
// expired are left out; an address holding several seats passes until
// the last expires. The room must have been put in the table (Room,
// Adopt); else the error wraps ErrNoRoom.
func (d *Door) Seats(id uint32, seats []Seat) error {
	now := time.Now()
	var v4, v6 []nftables.SetElement
	until := make(map[netip.Addr]time.Time, len(seats))
	for _, s := range seats {
		a := s.IP.Unmap().WithZone("")
		if a.IsValid() && s.Expires.After(until[a]) {
			until[a] = s.Expires
		}
	}
	for a, exp := range until {
		left := exp.Sub(now)
		if left < time.Millisecond {
			continue
		}
		// The kernel counts in milliseconds; an element without a
		// timeout would stay for good.
		e := nftables.SetElement{Key: a.AsSlice(), Timeout: left.Truncate(time.Millisecond)}
		if a.Is4() {
			v4 = append(v4, e)
		} else {
			v6 = append(v6, e)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	err := d.apply(func() (bool, error) {
		if _, ok := d.rooms[id]; !ok {
			return false, nil
		}
		s4, s6 := d.sets(id)
		d.conn.FlushSet(s4)
		d.conn.FlushSet(s6)
		if len(v4) > 0 {
			if err := d.conn.SetAddElements(s4, v4); err != nil {
				return false, err
			}
		}
		if len(v6) > 0 {
			return true, d.conn.SetAddElements(s6, v6)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("nftdoor: seats of room %d: %w", id, err)
	}
	if _, ok := d.rooms[id]; !ok {
		return fmt.Errorf("%w: %d", ErrNoRoom, id)
	}
	return nil
}

// Close takes room id out of the table: its port is no longer judged.
// Call it once the room's server is gone. A room not in the table is
// no error.
func (d *Door) Close(id uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	err := d.apply(func() (bool, error) {
		if _, ok := d.rooms[id]; !ok {
			return false, nil
		}
		return true, d.queueDrop(id)
	})
	if err != nil {
		return fmt.Errorf("nftdoor: closing room %d: %w", id, err)
	}
	delete(d.rooms, id)
	return nil
}

// queueDrop queues what removes room id. d.mu is held.
func (d *Door) queueDrop(id uint32) error {
	if port := d.rooms[id]; port != 0 {
		if err := d.conn.SetDeleteElements(d.ports, []nftables.SetElement{portKey(port)}); err != nil {
			return err
		}
	}
	ch := &nftables.Chain{Name: roomChain(id), Table: d.table}
	d.conn.FlushChain(ch)
	d.conn.DelChain(ch)
	s4, s6 := d.sets(id)
	d.conn.DelSet(s4)
	d.conn.DelSet(s6)
	return nil
}

// Reconcile removes, in one batch, every room of the table that keep
// does not hold, and puts every room keep holds on its port (as Adopt):
// for a lobby that adopted the rooms of another process.
func (d *Door) Reconcile(keep map[uint32]uint16) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	was := make(map[uint32]uint16, len(d.rooms))
	for id, port := range d.rooms {
		was[id] = port
	}
	var drop []uint32
	for id := range d.rooms {
		if _, ok := keep[id]; !ok {
			drop = append(drop, id)
		}
	}
	// Drops first: their ports may be kept rooms'.
	for _, id := range drop {
		if err := d.queueDrop(id); err != nil {
			return d.broken(err)
		}
		delete(d.rooms, id)
	}
	var put []uint32
	for id, port := range keep {
		if p, ok := d.rooms[id]; id != 0 && port != 0 && (!ok || p != port) {
			put = append(put, id)
		}
	}
	slices.Sort(put)
	for _, id := range put {
		if err := d.queueRoom(id, keep[id]); err != nil {
			return d.broken(err)
		}
		d.placed(id, keep[id]) // the next one's view of who holds what
	}
	if len(drop)+len(put) == 0 {
		return nil
	}
	if err := d.conn.Flush(); err != nil {
		d.rooms = was // the batch changed nothing
		return fmt.Errorf("nftdoor: reconcile: %w", err)
	}
	return nil
}

// sets returns room id's two sets.
func (d *Door) sets(id uint32) (*nftables.Set, *nftables.Set) {
	return &nftables.Set{Table: d.table, Name: set4(id), KeyType: nftables.TypeIPAddr, HasTimeout: true},
		&nftables.Set{Table: d.table, Name: set6(id), KeyType: nftables.TypeIP6Addr, HasTimeout: true}
}

// broken marks the door unusable: a batch failed to be built, and part of
// it may be queued. d.mu is held.
func (d *Door) broken(err error) error {
	d.err = fmt.Errorf("nftdoor: a batch could not be built, the door is stuck: %w", err)
	return d.err
}

// Release lets go of the table, leaving it as it is for the process that
// takes the rooms over (it opens the table under the same name).
func (d *Door) Release() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if errors.Is(d.err, ErrClosed) {
		return nil
	}
	d.err = ErrClosed
	return d.closeConns()
}

// Remove deletes the table, every room's door with it.
func (d *Door) Remove() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if errors.Is(d.err, ErrClosed) {
		return nil
	}
	d.conn.DelTable(d.table)
	err := d.conn.Flush()
	if errors.Is(err, unix.ENOENT) {
		err = nil // someone removed it before
	}
	d.err = ErrClosed
	return errors.Join(err, d.closeConns())
}

func (d *Door) closeConns() error {
	return errors.Join(d.conn.CloseLasting(), d.ct.Close())
}

// Exists reports whether the table name exists in the calling thread's
// network namespace.
func Exists(name string) (bool, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := nftables.New(nftables.AsLasting())
	if err != nil {
		return false, err
	}
	defer c.CloseLasting()
	_, err = c.ListTableOfFamily(name, nftables.TableFamilyINet)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return err == nil, err
}

// Sweep deletes, in one batch, the tables (family inet) of the calling
// thread's network namespace whose names stale picks, and returns their
// names: for the tables of lobbies that died without removing theirs.
func Sweep(stale func(name string) bool) ([]string, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := nftables.New(nftables.AsLasting())
	if err != nil {
		return nil, err
	}
	defer c.CloseLasting()
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, t := range tables {
		if stale(t.Name) {
			c.DelTable(t)
			gone = append(gone, t.Name)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	return gone, c.Flush()
}

// portKey is the map element of port.
func portKey(port uint16) nftables.SetElement {
	return nftables.SetElement{Key: binaryutil.BigEndian.PutUint16(port)}
}

// saddr loads the source address of a's family into register 1, for
// packets of that family only.
func saddr(a netip.Addr) []expr.Any {
	if a.Is4() {
		return []expr.Any{
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		}
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV6}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 16},
	}
}

// ifname is an interface name as the kernel compares it.
func ifname(n string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, n)
	return b
}

func ref[T any](v T) *T { return &v }

// forget deletes every conntrack flow whose original direction is UDP to
// port, in every family: in one request where the kernel filters a flush
// (Linux 6.12), else by walking the flows.
func (d *Door) forget(port uint16) error {
	d.ctMu.Lock()
	defer d.ctMu.Unlock()
	err := d.flush(port)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
		err = d.walk(port)
	}
	return err
}

// flush asks the kernel to delete the flows to port itself.
func (d *Door) flush(port uint16) error {
	proto, err := netlink.MarshalAttributes([]netlink.Attribute{
		{Type: ctaProtoNum, Data: []byte{unix.IPPROTO_UDP}},
		{Type: ctaProtoDstPort, Data: binaryutil.BigEndian.PutUint16(port)},
	})
	if err != nil {
		return err
	}
	tuple, err := netlink.MarshalAttributes([]netlink.Attribute{{Type: ctaTupleProto | unix.NLA_F_NESTED, Data: proto}})
	if err != nil {
		return err
	}
	filter, err := netlink.MarshalAttributes([]netlink.Attribute{
		{Type: ctaFilterOrigFlags, Data: binaryutil.NativeEndian.PutUint32(ctaFilterProtoNum | ctaFilterProtoDstPort)},
		{Type: ctaFilterReplyFlags, Data: binaryutil.NativeEndian.PutUint32(0)},
	})
	if err != nil {
		return err
	}
	attrs, err := netlink.MarshalAttributes([]netlink.Attribute{
		{Type: ctaTupleOrig | unix.NLA_F_NESTED, Data: tuple},
		{Type: ctaFilter | unix.NLA_F_NESTED, Data: filter},
	})
	if err != nil {
		return err
	}
	for _, family := range []byte{unix.AF_INET, unix.AF_INET6} {
		_, err := d.ct.Execute(netlink.Message{
			Header: netlink.Header{Type: ctType(ctDelete), Flags: netlink.Request | netlink.Acknowledge},
			Data:   append([]byte{family, 1, 0, 0}, attrs...),
		})
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return nil
}

// walk deletes the flows to port one by one, reading them all.
func (d *Door) walk(port uint16) error {
	req := netlink.Message{
		Header: netlink.Header{Type: ctType(ctGet), Flags: netlink.Request | netlink.Dump},
		Data:   []byte{unix.AF_UNSPEC, 0, 0, 0},
	}
	msgs, err := d.ct.Execute(req)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // no conntrack table yet
		}
		return err
	}
	var errs []error
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		tuple, zone, ok := udpTo(m.Data[4:], port)
		if !ok {
			continue
		}
		attrs := []netlink.Attribute{{Type: ctaTupleOrig | unix.NLA_F_NESTED, Data: tuple}}
		if zone != nil {
			attrs = append(attrs, netlink.Attribute{Type: ctaZone, Data: zone})
		}
		b, err := netlink.MarshalAttributes(attrs)
		if err != nil {
			return err
		}
		del := netlink.Message{
			Header: netlink.Header{Type: ctType(ctDelete), Flags: netlink.Request | netlink.Acknowledge},
			Data:   append([]byte{m.Data[0], 0, 0, 0}, b...),
		}
		if _, err := d.ct.Execute(del); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ctnetlink's message types and attributes (linux/netfilter/nfnetlink_conntrack.h).
const (
	ctGet    = 1 // IPCTNL_MSG_CT_GET
	ctDelete = 2 // IPCTNL_MSG_CT_DELETE

	ctaTupleOrig          = 1      // CTA_TUPLE_ORIG
	ctaFilter             = 25     // CTA_FILTER
	ctaFilterOrigFlags    = 1      // CTA_FILTER_ORIG_FLAGS
	ctaFilterReplyFlags   = 2      // CTA_FILTER_REPLY_FLAGS
	ctaFilterProtoNum     = 1 << 3 // CTA_FILTER_F_CTA_PROTO_NUM
	ctaFilterProtoDstPort = 1 << 5 // CTA_FILTER_F_CTA_PROTO_DST_PORT
	ctaZone               = 18     // CTA_ZONE
	ctaTupleProto         = 2      // CTA_TUPLE_PROTO
	ctaProtoNum           = 1      // CTA_PROTO_NUM
	ctaProtoDstPort       = 3      // CTA_PROTO_DST_PORT

	nlaTypeMask = 0x3fff // NLA_TYPE_MASK: the type without the nested and byte-order flags
)

func ctType(msg int) netlink.HeaderType {
	return netlink.HeaderType(unix.NFNL_SUBSYS_CTNETLINK<<8 | msg)
}

// udpTo returns the original tuple (and zone) of a conntrack entry's
// attributes b if the entry is UDP to port.
func udpTo(b []byte, port uint16) (tuple, zone []byte, ok bool) {
	attrs, err := netlink.UnmarshalAttributes(b)
	if err != nil {
		return nil, nil, false
	}
	for _, a := range attrs {
		switch a.Type & nlaTypeMask {
		case ctaTupleOrig:
			tuple = a.Data
		case ctaZone:
			zone = a.Data
		}
	}
	if tuple == nil {
		return nil, nil, false
	}
	parts, err := netlink.UnmarshalAttributes(tuple)
	if err != nil {
		return nil, nil, false
	}
	for _, p := range parts {
		if p.Type&nlaTypeMask != ctaTupleProto {
			continue
		}
		proto, err := netlink.UnmarshalAttributes(p.Data)
		if err != nil {
			return nil, nil, false
		}
		var num byte
		var dport uint16
		for _, x := range proto {
			switch {
			case x.Type&nlaTypeMask == ctaProtoNum && len(x.Data) == 1:
				num = x.Data[0]
			case x.Type&nlaTypeMask == ctaProtoDstPort && len(x.Data) == 2:
				dport = binaryutil.BigEndian.Uint16(x.Data)
			}
		}
		return tuple, zone, num == unix.IPPROTO_UDP && dport == port
	}
	return nil, nil, false
}
