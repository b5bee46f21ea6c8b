package supervisor

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// This file is the supervisor's side of a cluster of hosts (package
// cluster): a capacity to place rooms by, and room ids confined to the
// range of ids the host claimed, so that ids are unique across hosts.

// IDRange is a block of room ids, First to Last inclusive, that one host
// alone hands out; Next is the first id to hand out.
type IDRange struct{ First, Last, Next uint32 }

// idRange confines roomIDs to a range; the zero value confines nothing.
type idRange struct{ first, last uint32 }

// successor is the id after id: the next in the range, wrapping to its
// first, or without a range the next one but 0.
func (r idRange) successor(id uint32) uint32 {
	if r.last != 0 && id == r.last {
		return r.first
	}
	if id++; id == 0 {
		id = 1
	}
	return id
}

// NewInRange is New for a host of a cluster: every room id it hands out,
// from the very first, is in ids. No warm room starts before the range is
// set, since a warm room keeps the id it was started with.
func NewInRange(cfg Config, ids IDRange, log zerolog.Logger) (*Supervisor, error) {
	if ids.First == 0 || ids.Last < ids.First || ids.Next < ids.First || ids.Next > ids.Last {
		return nil, fmt.Errorf("supervisor: id range %d-%d starting at %d", ids.First, ids.Last, ids.Next)
	}
	warm := cfg.Warm
	cfg.Warm = 0
	s, err := New(cfg, log)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	next := ids.Next
	for id := range s.live { // adopted rooms keep their ids: never hand them out again
		if id >= next && id <= ids.Last {
			next = id + 1
		}
	}
	s.mu.Unlock()
	s.ids.mu.Lock()
	s.ids.idRange = idRange{first: ids.First, last: ids.Last}
	s.ids.next = next
	if next > ids.Last {
		s.ids.next = ids.First
	}
	s.ids.mu.Unlock()
	if warm > 0 {
		s.mu.Lock()
		s.cfg.Warm = warm
		s.mu.Unlock()
		s.wg.Add(1)
		go s.keepWarm()
		s.wakeWarm()
	}
	return s, nil
}

// Capacity is how many rooms Create could hand out now: the warm rooms
// ready, plus the instances MaxInstances still allows for which a port is
// ready.
func (s *Supervisor) Capacity() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0
	}
	ready := 0
	for _, r := range s.warm {
		if r.cause == "" {
			ready++
		}
	}
	free := max(s.cfg.MaxInstances-s.processes()-s.spawning, 0)
	ports, _, _, _ := s.ports.counts(time.Now())
	return ready + min(free, ports)
}
