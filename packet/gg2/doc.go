// Package gg2 encodes and decodes the GG2-style lobby protocol: UDP
// registrations and unregistrations sent by game servers, and the TCP list
// query a client sends and the list the lobby writes back; and the legacy
// protocol older Gang Garrison 2 versions speak (see Legacy protocol below).
// Every function is pure: no I/O, no clock.
//
// All integers of the new-style protocol are big-endian. A UUID is 16 raw
// bytes in the order it is written (b5dae2e8-… goes on the wire as
// b5 da e2 e8 …).
//
// Registration (UDP), two forms. Both share the first 59 bytes:
//
//	 0  message UUID      16  b5dae2e8-424f-9ed0-0fcb-8c21c7ca1352
//	16  server ID         16  random per server start; a secret
//	32  lobby ID          16  1ccf16b1-436d-856f-504d-cc1af306aaa7 for GG2
//	48  transport          1  0 TCP, 1 UDP; anything else is invalid
//	49  port               2  0 is invalid
//	51  slots              2  player slots
//	53  players            2  occupied slots
//	55  bots               2
//	57  flags              2  bit 0 (of the byte at 58): password
//
// The counted form (the newer text) goes on with
//
//	59  entry count        2
//	61  key/value table    count entries, ending the datagram
//
// and the legacy form with the table alone, from 59 to the end. A table entry
// is
//
//	keyLen u8 | key (keyLen bytes) | valueLen u16 | value (valueLen bytes)
//
// [ParseRegistration] tries the counted form first and falls back to the
// legacy form only when the counted reading does not consume the datagram
// exactly. A registration must carry a "name" key.
//
// Unregister (UDP), exactly 32 bytes:
//
//	 0  message UUID      16  488984ac-45dc-86e1-9901-98dd1c01c064
//	16  server ID         16
//
// List query (TCP, client to lobby), exactly 32 bytes:
//
//	 0  list protocol     16  297d0df4-430c-bf61-640a-640897eaef57
//	16  lobby ID          16
//
// List reply (TCP, lobby to client; the lobby closes after writing it):
//
//	0  server count       4
//	4  server blocks, each:
//	    0  block length    4  counts the bytes after itself (35 + table)
//	    4  transport       1
//	    5  IPv4 port       2  0: no IPv4 endpoint
//	    7  IPv4 address    4
//	   11  IPv6 port       2  0: no IPv6 endpoint
//	   13  IPv6 address   16
//	   29  slots           2
//	   31  players         2
//	   33  bots            2
//	   35  flags           2
//	   37  entry count     2
//	   39  key/value table
//
// # Legacy protocol
//
// Older Gang Garrison 2 versions and mods speak an older protocol on a
// port of its own (29942). Its integers are little-endian. A version names
// a protocol id: one byte v (not 128) means [LegacyBaseUUID] + v, the
// byte 128 is followed by the protocol id itself.
//
// Registration (UDP, server to lobby):
//
//	0  magic              6  04 08 0f 10 17 2a
//	6  version            1 or 17
//	   port               2  little-endian; 0 is invalid
//	   info length        1
//	   info               the info string, exactly info length bytes
//
// The info string reads [!private!][[map]] name [players/slots][ - mod]
// (see [ParseLegacyInfo]).
//
// Query (TCP, client to lobby): the version alone, 1 or 17 bytes. The
// lobby answers and closes:
//
//	0  server count       1  at most 255
//	1  per server:
//	    0  info length     1
//	    1  info            the info string rebuilt by the lobby
//	       IPv4 address    4
//	       port            2  little-endian
//
// Counts and lengths come from the sender: decoders never allocate from them,
// and every length is checked against the bytes present before slicing.
package gg2
