package gunz

// CommandRequestServerList is the commandId of a locator request.
const CommandRequestServerList = 40001

// RequestLen is the exact size of a locator request.
const RequestLen = HeaderLen + CommandHeaderLen

// Request asks a locator for its server list. It has no parameters.
type Request struct {
	Serial uint8 // echoed in the response
}

// ParseRequest decodes a locator request, checksum included.
func ParseRequest(b []byte) (Request, error) {
	serial, params, err := parseCommand("request", b, CommandRequestServerList)
	if err != nil {
		return Request{}, err
	}
	if len(params) != 0 {
		return Request{}, fail("request", RequestLen, ErrSize)
	}
	return Request{Serial: serial}, nil
}

// Append encodes r with its checksum.
func (r Request) Append(b []byte) []byte {
	start := len(b)
	b = appendCommand(b, CommandRequestServerList, r.Serial, 0)
	seal(b[start:])
	return b
}
