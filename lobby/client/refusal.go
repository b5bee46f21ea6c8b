package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// Refusal is the error of a CREATE or JOIN the lobby answered with
// JOIN_FAILED; it matches ErrJoinFailed. The native protocol says nothing
// of why: Reason is room.CodeNone until Why says more (a lobby that
// speaks the extension says why itself: see RefusedError).
type Refusal struct {
	Op     string // the request, as errors name it: "join 127.0.0.1:7777 room 42"
	Room   uint32 // the room a JOIN asked for; 0 for a CREATE
	Create bool
	// Reason is why, as far as is known: room.CodeNone when unknown.
	Reason room.Code
	// Listed is the room as the lobby listed it right after a refused
	// JOIN, when Why found it there.
	Listed *packet.Room
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s: %v (%s)", r.Op, ErrJoinFailed, r.explain())
}

// Unwrap makes a Refusal match ErrJoinFailed.
func (r *Refusal) Unwrap() error { return ErrJoinFailed }

// explain says what is known of the reason.
func (r *Refusal) explain() string {
	switch {
	case r.Reason != room.CodeNone:
		s := reasonText(r.Reason)
		if l := r.Listed; l != nil {
			s += fmt.Sprintf(": %s %d/%d", l.State, l.Players, l.MaxPlayers)
		}
		return s
	case r.Create:
		return "the lobby could not start a room: it runs as many as it may, is draining, " +
			"holds your network's share, or its game server failed to start; its log says which"
	case r.Listed != nil:
		return fmt.Sprintf("room is listed %s %d/%d, so the lobby refused for another reason: "+
			"your address holds its share of the room's seats, or the room is ending; its log says which",
			r.Listed.State, r.Listed.Players, r.Listed.MaxPlayers)
	}
	return "room unknown, full, or not waiting"
}

// Why looks at the lobby's room list for what it can tell of a refused
// JOIN (err, as Join returned it): that the room is not listed (ended, or
// never was), is full, or its match has begun. It returns err with what
// it learnt; err itself when it is no JOIN refusal, or the list cannot be
// had. A CREATE's refusal leaves nothing in the list to look at.
func (c *Client) Why(ctx context.Context, err error) error {
	var r *Refusal
	if !errors.As(err, &r) || r.Create {
		return err
	}
	rooms, lerr := c.List(ctx)
	if lerr != nil {
		return err
	}
	out := *r
	out.Reason = room.CodeNotFound
	for _, l := range rooms {
		if l.ID != r.Room {
			continue
		}
		listed := l
		out.Listed = &listed
		switch {
		case l.State != packet.Waiting && l.State != packet.Countdown:
			out.Reason = room.CodeStarted
		case l.Players >= l.MaxPlayers:
			out.Reason = room.CodeFull
		default:
			out.Reason = room.CodeNone
		}
	}
	return &out
}
