// Package packet encodes and decodes Foyer's native lobby protocol,
// messages 0x40-0x46, in both framings a client may use.
//
// The compact framing is an 8-byte header, the payload and a CRC-32:
//
//	offset  size  field
//	0       1     packetType: 1 client to server, 2 server to client
//	1       1     messageType: 0x40-0x46
//	2       2     sequenceId
//	4       2     payloadSize (n)
//	6       2     originalSize
//	8       n     payload
//	8+n     4     CRC-32 of bytes [0, 8+n)
//
// The legacy framing is the original game's 17-byte header:
//
//	offset  size  field
//	0       4     magic A3 5F C8 1D
//	4       1     version: 0x01, or 0x81 if the payload is compressed
//	5       1     packetType
//	6       1     messageType
//	7       2     sequenceId
//	9       4     tickId
//	13      2     payloadSize (n)
//	15      2     originalSize
//	17      n     payload
//	17+n    4     CRC-32 of bytes [0, 17+n)
//
// All integers are big-endian. The CRC is the IEEE CRC-32 of every byte
// before it. A legacy datagram is told apart by its first byte, 0xA3,
// which can never be a packetType. A payload whose originalSize exceeds its
// payloadSize is an LZ4 block that inflates to exactly originalSize bytes.
//
// Payloads by message type:
//
//	LIST_ROOMS   0x40 client->server  empty
//	ROOM_LIST    0x41 server->client  roomCount u16, then per room:
//	                                  roomId u32, players u16, maxPlayers u16,
//	                                  port u16, state u8 (11 bytes)
//	CREATE_ROOM  0x42 client->server  empty
//	ROOM_CREATED 0x43 server->client  roomId u32, port u16
//	JOIN_ROOM    0x44 client->server  roomId u32
//	JOIN_SUCCESS 0x45 server->client  roomId u32, port u16
//	JOIN_FAILED  0x46 server->client  empty
//
// The package is pure: it never does I/O. [Parse] validates untrusted bytes
// completely and reports the first problem as one of the exported Err
// values, which [Reason] turns into a label for counters. Errors are the
// bare sentinels, never wrapped with the input, so that rejecting a flood of
// garbage costs no allocation. A JOIN_ROOM for room 0 is well-formed here:
// whether a room exists is the lobby's business, and it answers JOIN_FAILED.
package packet
