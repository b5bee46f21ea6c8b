// Package teeinfo encodes and decodes Teeworlds/DDNet server info: the
// connless request a browser sends to a game server's UDP port and the
// server's reply, in the vanilla form (gie3/inf3) and DDNet's extended form
// (xe/iext, with iex+ packets for players that do not fit). Every function
// is pure: no I/O, no clock.
//
// A connless datagram starts with a 6-byte header: six 0xFF bytes, or, for
// DDNet's extended request, "xe" followed by four bytes of extra data. The
// message then starts with four more 0xFF bytes and a 4-byte type.
//
// Requests are 15 bytes:
//
//	vanilla   ff ff ff ff ff ff | ff ff ff ff "gie3" | token u8
//	extended  "xe" extra u16 reserved u16 | ff ff ff ff "gie3" | token u8
//
// extra is big-endian; reserved is zero when sent and ignored when read. A
// vanilla request gets an inf3 reply carrying token; an extended one gets
// iext (and iex+) carrying extra<<8 | token.
//
// Replies are ten 0xFF bytes, the type, then fields that are all
// zero-terminated strings: str is text, int a decimal number.
//
//	inf3  token int, version str, name str, map str, game_type str,
//	      flags int, num_players int, max_players int, num_clients int,
//	      max_clients int, then per client:
//	          name str, clan str, country int, score int, is_player int
//	iext  token int, version str, name str, map str, map_crc int,
//	      map_size int, game_type str, flags int, num_players int,
//	      max_players int, num_clients int, max_clients int, reserved str,
//	      then per client:
//	          name str, clan str, country int, score int, is_player int,
//	          reserved str
//	iex+  token int, packet_no int (1..63), reserved str, then clients as
//	      in iext
//
// Clients run to the end of the datagram. An extended reply is complete
// when the iext packet and its iex+ packets together carry num_clients
// clients; [Assembler] collects them. Flags bit 0 is the password flag.
//
// Text is cleaned the way the reference implementation cleans it, on the
// way in and on the way out, so that what is encoded parses back equal:
// invalid UTF-8 becomes U+FFFD, bytes below 32 become spaces, leading
// spaces are dropped, and the result is cut to [MaxString] bytes on a rune
// boundary. Ints must be decimal (an optional minus, at least one digit)
// and fit in 32 bits. A string longer than MaxString bytes on the wire is
// refused, and the number of clients read from one datagram is bounded by
// the bytes present, never by a count the sender wrote.
package teeinfo
