package main

import (
	"bytes"
	"fmt"
	"strings"
)

// Where the package puts things.
const (
	installedBinary = "/usr/bin/foyer"
	stateDir        = "/var/lib/foyer"
	// tokenFile is the admin token postinst makes at install (foyer
	// token), root:foyer 0640.
	tokenFile = "/etc/foyer/admin-token"
)

// unitBinary is where docs/foyer.service, written for a hand install,
// runs the binary from.
const unitBinary = "/usr/local/bin/foyer"

// packagedConfig is config.toml as the package installs it: the same file,
// with [supervisor] state_dir turned on in the foyer user's state
// directory when config.toml has that key off (`state_dir = ""`), and
// [admin] token_file set to the token postinst makes when config.toml has
// none (`token_file = ""`). A config.toml without those keys is installed
// as it is.
func packagedConfig(conf []byte) []byte {
	lines := bytes.SplitAfter(conf, []byte("\n"))
	section := ""
	for i, l := range lines {
		t := string(bytes.TrimSpace(l))
		if strings.HasPrefix(t, "[") {
			section = t
		}
		switch {
		case section == "[supervisor]" && t == `state_dir = ""`:
			lines[i] = fmt.Appendf(nil, "# The Debian package keeps the state in the foyer user's directory.\nstate_dir = %q\n", stateDir)
		case section == "[admin]" && t == `token_file = ""`:
			lines[i] = fmt.Appendf(nil, "# The Debian package made a random token at install, which root and\n"+
				"# the foyer group read.\ntoken_file = %q\n", tokenFile)
		}
	}
	return bytes.Join(lines, nil)
}

// packagedUnit is docs/foyer.service as the package installs it: its Exec
// lines run the packaged binary. It fails if ExecStart then runs anything
// else, so a change of the unit cannot ship a service that does not start.
func packagedUnit(unit []byte) ([]byte, error) {
	lines := bytes.SplitAfter(unit, []byte("\n"))
	start := ""
	for i, l := range lines {
		if !bytes.HasPrefix(l, []byte("Exec")) {
			continue
		}
		lines[i] = bytes.ReplaceAll(l, []byte(unitBinary), []byte(installedBinary))
		if cmd, ok := strings.CutPrefix(string(lines[i]), "ExecStart="); ok {
			// The prefixes systemd allows before the path: "-@:+!".
			if f := strings.Fields(strings.TrimLeft(cmd, "-@:+!")); len(f) > 0 {
				start = f[0]
			}
		}
	}
	if start != installedBinary {
		return nil, fmt.Errorf("ExecStart runs %q, not %s or %s", start, unitBinary, installedBinary)
	}
	return bytes.Join(lines, nil), nil
}
