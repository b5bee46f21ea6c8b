package instance

// The info answers' limits, for the tests that check them from outside.
const (
	MaxInfoPackets = maxInfoPackets
	PerNetInterval = perNetInterval
	PerNetBurst    = perNetBurst
)
