package config

// check refuses what no single value shows: values that contradict each
// other.
func (k *keys) check(r *reader, c *Config) {
	if sc := &c.Supervisor; sc.Probe != "" && len(sc.Command) == 0 {
		r.refuse("needs a command (the built-in room is probed over go-plugin)", k.Supervisor.Probe)
	}
}
