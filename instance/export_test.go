package instance

// The info answers' limits, for the tests that check them from outside.
const (
	MaxInfoPackets = maxInfoPackets
	PerNetInterval = perNetInterval
	PerNetBurst    = perNetBurst
)

// HandshakeEnv is the variable that tells a process a Foyer host started
// it, for tests that start an instance without Launch.
var HandshakeEnv = handshake.MagicCookieKey + "=" + handshake.MagicCookieValue
