package room

import (
	"context"
	"errors"
	"strconv"
)

// Code is why a request was refused, as a small stable number: the
// extended lobby protocol carries it in EXT_REFUSED, and operator tooling
// shows it. Numbers are never reused; a reader should show a code it does
// not know by its number.
type Code uint8

// The refusal codes. CodeNone is no refusal.
const (
	CodeNone          Code = 0
	CodeNotFound      Code = 1 // no such room, or no room by that code (private rooms included)
	CodeFull          Code = 2 // every place is taken or held
	CodeStarted       Code = 3 // the match has begun or ended
	CodeWrongPassword Code = 4 // the room's password is not that
	CodeQuota         Code = 5 // the sender's address or network holds its share
	CodeRateLimited   Code = 6 // the sender asks too often (CREATEs, password guesses)
	CodeNoCapacity    Code = 7 // the host starts no more rooms now (max_instances, ports, spawn)
	CodeDraining      Code = 8 // the host is shutting down, handing over, or drained by its operator
	CodeDenied        Code = 9 // the lobby does not offer that room to this sender
)

// codeNames are the codes' labels, for counters and for people.
var codeNames = [...]string{
	CodeNone:          "none",
	CodeNotFound:      "not_found",
	CodeFull:          "full",
	CodeStarted:       "started",
	CodeWrongPassword: "wrong_password",
	CodeQuota:         "quota",
	CodeRateLimited:   "rate_limited",
	CodeNoCapacity:    "no_capacity",
	CodeDraining:      "draining",
	CodeDenied:        "denied",
}

// String is the code's label ("not_found"), or "code N" for a number
// this version does not know.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "code " + strconv.Itoa(int(c))
}

// Known reports whether c is one of the codes above.
func (c Code) Known() bool { return int(c) < len(codeNames) }

// More refusals of the room model, beside those of room.go.
var (
	// ErrWrongPassword refuses a JOIN whose password is not the room's.
	ErrWrongPassword = errors.New("wrong password")
	// ErrRateLimited refuses what its sender asks too often.
	ErrRateLimited = errors.New("rate limited")
	// ErrDenied refuses a room the lobby does not offer to the sender.
	ErrDenied = errors.New("denied")
)

// codeOf maps the room model's errors to codes, in matching order.
var codeOf = []struct {
	err  error
	code Code
}{
	{ErrNoRoom, CodeNotFound},
	{ErrFull, CodeFull},
	{ErrNotJoinable, CodeStarted},
	{ErrWrongPassword, CodeWrongPassword},
	{ErrQuota, CodeQuota},
	{ErrRateLimited, CodeRateLimited},
	{ErrCapacity, CodeNoCapacity},
	{ErrNoPorts, CodeNoCapacity},
	{ErrSpawn, CodeNoCapacity},
	{ErrUnreachable, CodeNoCapacity},
	{ErrClosed, CodeDraining},
	{ErrDraining, CodeDraining},
	{ErrDenied, CodeDenied},
	{ErrListing, CodeDenied},
	{context.Canceled, CodeDraining},
	{context.DeadlineExceeded, CodeNoCapacity},
}

// CodeOf is the refusal code of err: nil is CodeNone, an error of the
// room model its code, anything else CodeNoCapacity (the host could not
// do it).
func CodeOf(err error) Code {
	if err == nil {
		return CodeNone
	}
	for _, c := range codeOf {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return CodeNoCapacity
}
