package ext

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// A seat token is what a player carries from the lobby to the room: the
// room, the seat, the client and an expiry, signed by the host with a key
// the room holds too, so that the room checks it offline, in the player's
// first datagram (EXT_PRESENT).
//
//	offset  size  field
//	0       1     version (TokenVersion)
//	1       4     epoch: which of the host's keys signed it
//	5       4     roomId
//	9       4     seat: the seat's number in its room
//	13      8     client: the client's own id (EXT_CREATE, EXT_JOIN, EXT_QUICK)
//	21      4     expires: Unix seconds
//	25      16    HMAC-SHA256 of bytes [0, 25) under the epoch's key, cut to 16 bytes

// TokenVersion is the first byte of a seat token.
const TokenVersion = 1

// Sizes of a seat token.
const (
	tokenBody = 1 + 4 + 4 + 4 + 8 + 4
	tokenMAC  = 16
	// TokenLen is a seat token's length.
	TokenLen = tokenBody + tokenMAC
	// KeyLen is the length of a signing key.
	KeyLen = 32
)

// RoomKey is the key the tokens of room id are signed with: derived from
// the host's key, so that each room gets its own and can check tokens of
// its own seats only, never make one for another room.
func RoomKey(hostKey []byte, id uint32) []byte {
	m := hmac.New(sha256.New, hostKey)
	m.Write([]byte("foyer seat key"))
	m.Write(binary.BigEndian.AppendUint32(nil, id))
	return m.Sum(nil)
}

// SeatToken is what a seat token says.
type SeatToken struct {
	Epoch   uint32 // the key that signed it
	Room    uint32
	Seat    uint32
	Client  [8]byte
	Expires uint32 // Unix seconds
}

// Signer signs and checks seat tokens with one key. It is not safe for
// concurrent use; make one per goroutine (NewSigner is cheap).
type Signer struct {
	mac hash.Hash
	sum [sha256.Size]byte
}

// NewSigner returns a Signer with key, which should be KeyLen random bytes.
func NewSigner(key []byte) *Signer { return &Signer{mac: hmac.New(sha256.New, key)} }

// Sign appends t, signed, to b.
func (s *Signer) Sign(b []byte, t SeatToken) []byte {
	start := len(b)
	b = append(b, TokenVersion)
	b = binary.BigEndian.AppendUint32(b, t.Epoch)
	b = binary.BigEndian.AppendUint32(b, t.Room)
	b = binary.BigEndian.AppendUint32(b, t.Seat)
	b = append(b, t.Client[:]...)
	b = binary.BigEndian.AppendUint32(b, t.Expires)
	return append(b, s.macOf(b[start:])...)
}

// Verify reports whether b is a token this key signed (expiry aside:
// the caller holds the clock).
func (s *Signer) Verify(b []byte) bool {
	if len(b) != TokenLen || b[0] != TokenVersion {
		return false
	}
	return hmac.Equal(s.macOf(b[:tokenBody]), b[tokenBody:])
}

func (s *Signer) macOf(body []byte) []byte {
	s.mac.Reset()
	s.mac.Write(body)
	return s.mac.Sum(s.sum[:0])[:tokenMAC]
}

// ReadToken reads what a seat token says, without checking its MAC (see
// Signer.Verify): its epoch says which key to check it with.
func ReadToken(b []byte) (SeatToken, bool) {
	if len(b) != TokenLen || b[0] != TokenVersion {
		return SeatToken{}, false
	}
	t := SeatToken{
		Epoch:   binary.BigEndian.Uint32(b[1:]),
		Room:    binary.BigEndian.Uint32(b[5:]),
		Seat:    binary.BigEndian.Uint32(b[9:]),
		Expires: binary.BigEndian.Uint32(b[21:]),
	}
	copy(t.Client[:], b[13:21])
	return t, true
}
