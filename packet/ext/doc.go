// Package ext encodes and decodes Foyer's extension of the native lobby
// protocol: named and tagged rooms, filtered and paged listings, private
// rooms joined by code, passwords, quick join, seat tokens, address
// validation and refusal reasons (docs/protocol.md, "The extension").
//
// Extension messages travel in the same framings as the seed messages
// (package packet: the compact 8-byte header or the original game's 17
// bytes, a CRC-32 trailer) on the same lobby port, with message numbers
// 0x80-0x89, clear of the seed's 0x40-0x46 and of 0x47-0x74, which the
// original game's later lobby uses. A seed client never sends one, and the
// lobby sends one only in answer to one. Every payload starts with a
// version byte (Version); a decoder refuses a version it does not know.
//
//	EXT_LIST     0x80 client->lobby  filtered page of rooms after a cursor
//	EXT_ROOMS    0x81 lobby->client  the page, and the cursor to go on from
//	EXT_CREATE   0x82 client->lobby  a room with a name, mode, map, tags,
//	                                 private or not, with a password or not
//	EXT_SEAT     0x83 lobby->client  the seat: room, port, code, seat token
//	EXT_JOIN     0x84 client->lobby  a room by id or by code, and a password
//	EXT_REFUSED  0x85 lobby->client  why not, as a room.Code number
//	EXT_QUICK    0x86 client->lobby  the fullest joinable room matching a
//	                                 filter, or a new one
//	EXT_RETRY    0x87 lobby->client  a token to echo: show you receive
//	EXT_PRESENT  0x88 player->room   a seat token, before any game message
//	EXT_ADMITTED 0x89 room->player   the token's seat is the sender's
//
// The package is pure: no I/O, no clock. [Parse] checks every length and
// field of untrusted bytes and reports the first problem as one of the
// Err values ([Reason] labels them); it allocates nothing from a count the
// sender wrote that the bytes received do not back.
package ext
