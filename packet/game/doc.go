// Package game encodes and decodes the game protocol of Foyer's reference
// room: what a player and a room process say to each other on the room's
// UDP port once the lobby has handed out that port.
//
// It uses both framings of package packet, told apart by the first byte
// as the lobby tells them apart: the compact 8-byte header, and the
// original game's 17-byte header (magic A3 5F C8 1D, version, packetType,
// messageType, sequenceId, tickId, payloadSize, originalSize). Each is
// followed by the payload and a CRC-32 over header and payload. Message
// numbers are the original game's; payloads depend on the framing:
//
//	type  name                 direction       compact payload           legacy payload
//	0x01  CLIENT_HELLO         client->server  empty                     empty
//	0x02  CLIENT_JOIN_REQUEST  client->server  -                         empty, or spectator u8, userId u32
//	0x03  CLIENT_READY         client->server  empty                     empty
//	0x04  CLIENT_PING          client->server  token u32, or empty       empty
//	0x07  CLIENT_DISCONNECT    client->server  empty                     empty
//	0x10  SERVER_HELLO         server->client  roomId u32, slot u8,      empty
//	                                           maxPlayers u8
//	0x11  SERVER_JOIN_ACCEPT   server->client  -                         empty
//	0x12  SERVER_JOIN_DENY     server->client  reason u8 (DenyReason)    empty
//	0x13  SERVER_PONG          server->client  token u32 (the ping's)    empty (seq and tick: the ping's)
//	0x15  GAME_START           server->client  matchSeconds u16          empty
//	0x16  GAME_END             server->client  reason u8 (EndReason)     victory u8, playerCount u8 = 0
//	0x1F  ALL_READY            server->client  -                         empty
//	0x20  COUNTDOWN_TICK       server->client  secondsLeft u8            secondsLeft u8
//
// A dash is a type the framing does not have. All integers are
// big-endian; a flag byte (spectator, victory) is 0 or 1. A datagram is
// well-formed only if its framing holds (length, CRC, packetType), its
// type is one of its framing's, its packetType matches the message's
// direction, and its payload has one of the sizes above. A compressed
// payload is accepted as package packet accepts it; the encoder never
// compresses, since no payload here is longer than 6 bytes.
//
// The package is pure: [Parse] validates untrusted bytes and reports the
// first problem as a bare exported Err value, so rejecting a flood of
// garbage costs no allocation; [Reason] labels it for counters.
package game
