package gg2

import "github.com/foyerlobby/foyer/internal/sockfilter"

// DatagramShapes are the shapes, for a kernel socket filter, of the
// datagrams a lobby's new-style port takes: a registration (its UUID and
// at least its fixed part) and an unregister (its UUID and exact size).
func DatagramShapes() []sockfilter.Shape {
	return []sockfilter.Shape{
		append(sockfilter.Bytes(0, RegisterUUID[:]), sockfilter.AtLeast(regFixedLen)),
		append(sockfilter.Bytes(0, UnregisterUUID[:]), sockfilter.Length(UnregisterLen, UnregisterLen)),
	}
}

// LegacyShapes are the shapes of the datagrams a lobby's legacy port
// takes: a legacy registration, its magic and at least a one-byte
// version, a port and an info length.
func LegacyShapes() []sockfilter.Shape {
	return []sockfilter.Shape{
		append(sockfilter.Bytes(0, LegacyMagic[:]), sockfilter.AtLeast(len(LegacyMagic)+1+3)),
	}
}
