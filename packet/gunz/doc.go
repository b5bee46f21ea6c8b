// Package gunz encodes and decodes the GunZ locator query: the request a
// GunZ client sends to learn the game servers, and the response that lists
// them. Every function is pure: no I/O, no clock.
//
// All integers are little-endian. Every datagram is one raw command:
//
//	packet header, 6 bytes
//	  0  msgId      u16  0x0064: a raw command
//	  2  size       u16  the whole datagram
//	  4  checksum   u16  see Checksum
//	command, from offset 6
//	  0  size       u16  the command's bytes, this field included
//	  2  commandId  u16  40001 request, 40002 response
//	  4  serial     u8
//	  5  parameters
//
// The request (commandId 40001) has no parameters: 11 bytes in all. The
// response (commandId 40002) has one blob parameter:
//
//	 0  blobBytes    u32  the bytes after this field
//	 4  oneBlobSize  u32  15, the size of one server entry
//	 8  count        u32
//	12  count entries of 15 bytes:
//	      0  ip          4 bytes, a.b.c.d in that order
//	      4  port        u32
//	      8  serverId    u8
//	      9  maxPlayers  u16
//	     11  curPlayers  u16
//	     13  type        u8  1 debug, 2 match, 3 clan, 4 quest, 5 event, 6 test
//	     14  status      u8  0 offline, 1 online
//
// Decoders check every size field against the bytes present, and the
// checksum, before believing anything; the server count is capped by the
// bytes that follow it.
package gunz
