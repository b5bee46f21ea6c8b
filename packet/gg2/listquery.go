package gg2

// ListQueryLen is the exact size of a list query.
const ListQueryLen = 32

// ListQuery is what a client writes on its TCP connection to ask for the
// servers of one lobby. The list protocol UUID is implied: it is the only
// reply layout this package knows, so a query for another is malformed.
type ListQuery struct {
	Lobby UUID
}

// ParseListQuery decodes a list query of exactly 32 bytes.
func ParseListQuery(b []byte) (ListQuery, error) {
	lobby, err := parseUUIDPair("list query", b, ListProtocolUUID)
	return ListQuery{Lobby: lobby}, err
}

// Append encodes q.
func (q ListQuery) Append(b []byte) []byte {
	b = append(b, ListProtocolUUID[:]...)
	return append(b, q.Lobby[:]...)
}
