package lobby

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// memRooms is the real room table with no processes behind it
// (roomtabletest), so the lobby is tested over real sockets against the
// rules production runs: ids, seats, proofs, capacity. It adds only what
// the tests need around those rules: gates that hold Create and Join back,
// counts of both, and a record of the proof every JOIN carried.
type memRooms struct {
	*roomtabletest.Rooms
	t        testing.TB
	gate     chan struct{} // when set, Create waits for it
	joinGate chan struct{} // when set, Join waits for it (and may wait, it says)
	creates  atomic.Int64
	joins    atomic.Int64
	// beforeJoin, when set, runs as a Join begins, before its gate;
	// beforeCreate as an extension's CREATE or QUICK begins.
	beforeJoin, beforeCreate atomic.Pointer[func()]

	mu     sync.Mutex
	proofs *[]room.Proof // when set, the proof of every Join, in order
}

// newMemRooms returns an empty table whose Create makes up to
// maxInstances rooms.
func newMemRooms(t testing.TB, maxInstances int) *memRooms {
	m := &memRooms{Rooms: roomtabletest.New(t, roomtable.Config{}), t: t}
	m.SetCapacity(maxInstances)
	return m
}

// add lists r under its own id, as the table lists a room adopted from an
// earlier run, so a test can name its ids; the table holds r.Seats seats
// in it for players on their way in.
func (m *memRooms) add(r room.Room) {
	m.t.Helper()
	m.Enter(r, true, nil, nil)
	edgetest.HoldSeats(m.t, m.Rooms, r.ID, r.Seats)
}

func (m *memRooms) Create(ctx context.Context, creator netip.AddrPort) (room.Room, error) {
	m.creates.Add(1)
	if err := pass(ctx, m.gate); err != nil {
		return room.Room{}, err
	}
	return m.Rooms.Create(ctx, creator)
}

func (m *memRooms) Join(ctx context.Context, id uint32, player netip.AddrPort, proof room.Proof) (room.Room, error) {
	if err := m.joining(ctx, proof); err != nil {
		return room.Room{}, err
	}
	return m.Rooms.Join(ctx, id, player, proof)
}

// JoinAt is what the lobby calls, the table taking the time (see
// room.JoinerAt).
func (m *memRooms) JoinAt(ctx context.Context, id uint32, player netip.AddrPort, proof room.Proof, now time.Time) (room.Held, error) {
	if err := m.joining(ctx, proof); err != nil {
		return room.Held{}, err
	}
	return m.Rooms.JoinAt(ctx, id, player, proof, now)
}

// JoinWith is the extension's JOIN, counted and gated as Join is.
func (m *memRooms) JoinWith(ctx context.Context, req room.JoinRequest) (room.Grant, error) {
	if err := m.joining(ctx, req.Proof); err != nil {
		return room.Grant{}, err
	}
	return m.Rooms.JoinWith(ctx, req)
}

// CreateWith is the extension's CREATE, run after beforeCreate.
func (m *memRooms) CreateWith(ctx context.Context, creator netip.AddrPort, o room.CreateOptions) (room.Grant, error) {
	runHook(&m.beforeCreate)
	return m.Rooms.CreateWith(ctx, creator, o)
}

// QuickJoin is the extension's QUICK, run after beforeCreate.
func (m *memRooms) QuickJoin(ctx context.Context, f room.Filter, player netip.AddrPort, client [8]byte, mayCreate func() error) (room.Grant, error) {
	runHook(&m.beforeCreate)
	return m.Rooms.QuickJoin(ctx, f, player, client, mayCreate)
}

// runHook runs the function hook holds, if any.
func runHook(hook *atomic.Pointer[func()]) {
	if f := hook.Load(); f != nil {
		(*f)()
	}
}

// joining counts a JOIN, waits at the gate and records its proof.
func (m *memRooms) joining(ctx context.Context, proof room.Proof) error {
	m.joins.Add(1)
	runHook(&m.beforeJoin)
	if err := pass(ctx, m.joinGate); err != nil {
		return err
	}
	m.mu.Lock()
	if m.proofs != nil {
		*m.proofs = append(*m.proofs, proof)
	}
	m.mu.Unlock()
	return nil
}

// JoinNeverWaits is the table's answer (true: its Join only takes its
// lock), unless the test makes Join wait.
func (m *memRooms) JoinNeverWaits() bool { return m.joinGate == nil && m.Rooms.JoinNeverWaits() }

// pass waits for gate, when there is one, within ctx.
func pass(ctx context.Context, gate chan struct{}) error {
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
