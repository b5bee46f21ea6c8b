package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// goldenRoom is a room as a host writes it, byte for byte.
const goldenRoom = `{"id":1048577,"port":30001,"state":1,"players":2,"seats":1,"max":4,"pid":4242,"started":1700000000000,"source":"instance","name":"Room 1"}`

func TestRoomGolden(t *testing.T) {
	r := room.Room{ID: 1048577, Port: 30001, State: packet.Countdown, Players: 2, Seats: 1, MaxPlayers: 4, PID: 4242,
		StartedAt: time.UnixMilli(1700000000000), Source: room.Instance, Name: "Room 1"}
	b, err := json.Marshal(recordOf(r))
	if err != nil || string(b) != goldenRoom {
		t.Fatalf("encoded %s, %v; want %s", b, err, goldenRoom)
	}
	rec, err := decodeRoom(b)
	if err != nil {
		t.Fatal(err)
	}
	got := rec.row("b", netip.MustParseAddr("192.0.2.9"))
	r.Node, r.Host = "b", netip.MustParseAddr("192.0.2.9")
	if got != r {
		t.Errorf("decoded %+v\nwant    %+v", got, r)
	}
}

// TestRoomRefused: values that cannot be a room are refused.
func TestRoomRefused(t *testing.T) {
	for _, s := range []string{``, `{`, `[]`, `{"id":0,"port":1,"max":4}`, `{"id":1,"port":0,"max":4}`,
		`{"id":1,"port":1,"state":9}`, `{"id":1,"port":1,"players":-1}`, `{"id":1,"port":1,"max":70000}`,
		`{"id":1,"port":1,"host":"not an ip"}`, `{"id":4294967296,"port":1}`} {
		if _, err := decodeRoom([]byte(s)); err == nil {
			t.Errorf("decodeRoom(%q) accepted", s)
		}
	}
}

func TestRoomKeys(t *testing.T) {
	for _, tc := range []struct {
		key  string
		host string
		id   uint32
		ok   bool
	}{
		{"rooms.a.1", "a", 1, true},
		{"rooms.lobby.example.org.42", "lobby.example.org", 42, true},
		{"rooms.a.0", "", 0, false},
		{"rooms.a.4294967296", "", 0, false},
		{"rooms.42", "", 0, false},
		{"hosts.a.1", "", 0, false},
		{"rooms.a.x", "", 0, false},
	} {
		host, id, ok := parseRoomKey(tc.key)
		if host != tc.host || id != tc.id || ok != tc.ok {
			t.Errorf("parseRoomKey(%q) = %q, %d, %v; want %q, %d, %v", tc.key, host, id, ok, tc.host, tc.id, tc.ok)
		}
		if ok && roomKey(host, id) != tc.key {
			t.Errorf("roomKey(%q, %d) = %q, want %q", host, id, roomKey(host, id), tc.key)
		}
	}
}

// TestReplies: refusals travel by name and come back as the sentinels
// the lobby compares with ==, or wrapping theirs.
func TestReplies(t *testing.T) {
	for _, err := range []error{room.ErrFull, room.ErrNotJoinable, room.ErrNoRoom} {
		rep, derr := decodeReply(encodeReply(room.Room{}, err))
		if derr != nil || rep.refusal() != err {
			t.Errorf("%v came back as %v (%v)", err, rep.refusal(), derr)
		}
	}
	rep, _ := decodeReply(encodeReply(room.Room{}, fmt.Errorf("%w: 3 of 3 running", room.ErrCapacity)))
	if err := rep.refusal(); !errors.Is(err, room.ErrCapacity) || err.Error() != "max_instances reached: 3 of 3 running" {
		t.Errorf("a capacity refusal came back as %v", err)
	}
	for _, s := range []string{`{}`, `{"room":{"id":0}}`, `nonsense`} {
		if _, err := decodeReply([]byte(s)); err == nil {
			t.Errorf("decodeReply(%q) accepted", s)
		}
	}
}

// FuzzDecodeRoom: whatever a value holds, it is refused or it is a room
// that encodes back to a value read as the same room.
func FuzzDecodeRoom(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRoom(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeRoom(again)
		if err != nil || !back.equal(rec) {
			t.Fatalf("%s read as %+v, written as %s, read back as %+v (%v)", b, rec, again, back, err)
		}
	})
}

// FuzzDecodeReply: a reply is refused, or it is an ack, a valid room or a
// refusal that is an error.
func FuzzDecodeReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := decodeReply(b)
		if err != nil {
			return
		}
		if rep.Room != nil && !rep.Room.valid() || !rep.Ack && rep.Room == nil && rep.Err == "" {
			t.Fatalf("%s accepted as %+v", b, rep)
		}
		if rep.Room == nil && !rep.Ack && rep.refusal() == nil {
			t.Fatalf("%s: a refusal that is no error", b)
		}
	})
}

// TestRecordsCarryTheExtension: a room's mode, tags, join code and
// privacy travel to the other hosts with it, and a record with a code
// that is none, or tags the extension refuses, is no room.
func TestRecordsCarryTheExtension(t *testing.T) {
	r := room.Room{ID: 7, Port: 30000, MaxPlayers: 4, Source: room.Instance, Code: "KXMPRT", Private: true}
	r.SetMeta(room.Meta{Name: "Ann's", Mode: "ctf", Map: "dust", Tags: room.TagsOf([]room.Tag{{Key: "region", Value: "eu"}})})
	b, err := json.Marshal(recordOf(r))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := decodeRoom(b)
	if err != nil {
		t.Fatal(err)
	}
	got := rec.row("b", netip.Addr{})
	if got.Meta() != r.Meta() || got.Code != r.Code || !got.Private {
		t.Fatalf("sent %+v, got %+v", r, got)
	}
	for _, bad := range []string{
		`{"id":7,"port":1,"code":"KXMPRO"}`,
		`{"id":7,"port":1,"tags":[{"Key":"A","Value":"x"}]}`,
		`{"id":7,"port":1,"tags":[{"Key":"a"},{"Key":"b"},{"Key":"c"},{"Key":"d"},{"Key":"e"}]}`,
	} {
		if _, err := decodeRoom([]byte(bad)); err == nil {
			t.Errorf("%s is a room", bad)
		}
	}
}
