// Package game encodes and decodes the game protocol of Foyer's reference
// room: what a player and a room process say to each other on the room's
// UDP port once the lobby has handed out that port.
//
// It uses the lobby's compact framing (see package packet): an 8-byte
// header, the payload, and a CRC-32 over both. The legacy 17-byte framing
// is not part of this protocol. Message numbers are the original game's:
//
//	type  name              direction       payload
//	0x01  CLIENT_HELLO      client->server  empty
//	0x03  CLIENT_READY      client->server  empty
//	0x04  CLIENT_PING       client->server  token u32
//	0x07  CLIENT_DISCONNECT client->server  empty
//	0x10  SERVER_HELLO      server->client  roomId u32, slot u8, maxPlayers u8
//	0x12  SERVER_JOIN_DENY  server->client  reason u8 (see DenyReason)
//	0x13  SERVER_PONG       server->client  token u32 (the ping's)
//	0x15  GAME_START        server->client  matchSeconds u16
//	0x16  GAME_END          server->client  reason u8 (see EndReason)
//	0x20  COUNTDOWN_TICK    server->client  secondsLeft u8
//
// All integers are big-endian. A datagram is well-formed only if its
// framing holds (length, CRC, packetType), its packetType matches the
// message's direction, and its payload has exactly the size above. A
// compressed payload is accepted as package packet accepts it; the encoder
// never compresses, since no payload here is longer than 6 bytes.
//
// The package is pure: [Parse] validates untrusted bytes and reports the
// first problem as a bare exported Err value, so rejecting a flood of
// garbage costs no allocation; [Reason] labels it for counters.
package game
