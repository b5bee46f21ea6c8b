package gg2

// Hex fragments shared by the golden packets.
const (
	hexRegisterUUID   = "b5dae2e8 424f 9ed0 0fcb 8c21c7ca1352"
	hexUnregisterUUID = "488984ac 45dc 86e1 9901 98dd1c01c064"
	hexListUUID       = "297d0df4 430c bf61 640a 640897eaef57"
	hexGG2Lobby       = "1ccf16b1 436d 856f 504d cc1af306aaa7"
	hexServerID       = "00112233 4455 6677 8899 aabbccddeeff"
)

var testServerID = UUID{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
