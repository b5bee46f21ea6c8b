package refroom

import "strconv"

// Settings returns c as the settings a host hands a room, the form
// ParseSettings reads: ParseSettings(c.Settings(), max) is c again for any
// max of at least c.MinPlayers.
func (c Config) Settings() map[string]string {
	return map[string]string{
		"min_players":     strconv.Itoa(c.MinPlayers),
		"countdown":       c.Countdown.String(),
		"match_duration":  c.MatchDuration.String(),
		"silence_timeout": c.SilenceTimeout.String(),
	}
}
