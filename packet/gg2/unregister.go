package gg2

// UnregisterLen is the exact size of an unregister message.
const UnregisterLen = 32

// Unregister asks the lobby to drop a server before its registration
// expires. Only the server ID says which: it is the server's secret.
type Unregister struct {
	ServerID UUID
}

// ParseUnregister decodes an unregister message of exactly 32 bytes.
func ParseUnregister(b []byte) (Unregister, error) {
	serverID, err := parseUUIDPair("unregister", b, UnregisterUUID)
	return Unregister{ServerID: serverID}, err
}

// Append encodes u.
func (u Unregister) Append(b []byte) []byte {
	b = append(b, UnregisterUUID[:]...)
	return append(b, u.ServerID[:]...)
}

// parseUUIDPair decodes the two 32-byte messages: a fixed leading UUID, then
// the one the message carries.
func parseUUIDPair(msg string, b []byte, lead UUID) (UUID, error) {
	switch {
	case len(b) < 32:
		return UUID{}, fail(msg, len(b), ErrTruncated)
	case len(b) > 32:
		return UUID{}, fail(msg, 32, ErrLength)
	case UUID(b[:16]) != lead:
		return UUID{}, fail(msg, 0, ErrMessageType)
	}
	return UUID(b[16:32]), nil
}
