package instance

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/foyerlobby/foyer/instance/instancepb"
)

// statuses is a Watch call's stream, keeping what it is sent.
type statuses struct {
	grpc.ServerStream
	ctx  context.Context
	mu   sync.Mutex
	sent []*instancepb.Status
}

func (s *statuses) Context() context.Context { return s.ctx }

func (s *statuses) Send(st *instancepb.Status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, st)
	return nil
}

// Events do not hold the heartbeats back: a room whose players come and go
// more often than HeartbeatInterval, and which keeps giving the same
// account of itself, still says so on a heartbeat every interval. A host
// that counts a kept program alive by its accounts reaped such a room when
// each event put its next heartbeat off.
func TestHeartbeatsComeWhateverTheEvents(t *testing.T) {
	s := &server{rep: newReporter(nil)}
	details := Details{MaxPlayers: 4, Name: "busy"}
	s.rep.SetDetails(details) // the first account, which the snapshot carries
	ctx, cancel := context.WithCancel(context.Background())
	stream := &statuses{ctx: ctx}
	done := make(chan error, 1)
	go func() { done <- s.Watch(&instancepb.WatchRequest{}, stream) }()
	ip := netip.MustParseAddr("192.0.2.1")
	for start := time.Now(); time.Since(start) < 2*HeartbeatInterval+time.Second; {
		// Each event, then the same account again (the count the event
		// made): that rides on the next heartbeat only.
		s.rep.PlayerConnected(ip)
		details.Players = 1
		s.rep.SetDetails(details)
		time.Sleep(100 * time.Millisecond)
		s.rep.PlayerDisconnected(ip)
		details.Players = 0
		s.rep.SetDetails(details)
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	stream.mu.Lock()
	defer stream.mu.Unlock()
	beats := 0
	for _, st := range stream.sent[1:] { // after the snapshot
		if st.GetDetails() != nil {
			beats++
		}
	}
	if beats == 0 {
		t.Fatalf("no heartbeat with the room's account in %d statuses over %v", len(stream.sent), 2*HeartbeatInterval+time.Second)
	}
}
