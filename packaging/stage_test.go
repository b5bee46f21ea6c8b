package main

import (
	"os"
	"strings"
	"testing"
)

// The packaged config turns state_dir and the admin token file on where
// config.toml has them off, and only there.
func TestPackagedConfig(t *testing.T) {
	with := "[lobby]\nstate_dir = \"\"\ntoken_file = \"\"\n\n[supervisor]\nports = \"30000-30999\"\nstate_dir = \"\"\nid_file = \"\"\n" +
		"[admin]\ntoken = \"\"\ntoken_file = \"\"\n"
	want := "[lobby]\nstate_dir = \"\"\ntoken_file = \"\"\n\n[supervisor]\nports = \"30000-30999\"\n" +
		"# The Debian package keeps the state in the foyer user's directory.\n" +
		"state_dir = \"/var/lib/foyer\"\nid_file = \"\"\n" +
		"[admin]\ntoken = \"\"\n# The Debian package made a random token at install, which root and\n" +
		"# the foyer group read.\ntoken_file = \"/etc/foyer/admin-token\"\n"
	if got := string(packagedConfig([]byte(with))); got != want {
		t.Errorf("with state_dir:\n%s\nwant:\n%s", got, want)
	}
	without := "[supervisor]\nports = \"30000-30999\"\nid_file = \"\"\n"
	if got := string(packagedConfig([]byte(without))); got != without {
		t.Errorf("without state_dir:\n%s\nwant it unchanged", got)
	}
}

// The repository's own files stage: config.toml keeps every line but
// state_dir's and token_file's, and the unit runs /usr/bin/foyer.
func TestStageRepositoryFiles(t *testing.T) {
	conf, err := os.ReadFile("../" + configToml)
	if err != nil {
		t.Fatal(err)
	}
	packaged := string(packagedConfig(conf))
	for _, l := range strings.Split(string(conf), "\n") {
		if l != `state_dir = ""` && l != `token_file = ""` && !strings.Contains(packaged, l+"\n") {
			t.Errorf("packaged config lacks %q", l)
		}
	}
	unit, err := os.ReadFile("../" + unitFile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := packagedUnit(unit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "\nExecStart=/usr/bin/foyer serve --config /etc/foyer/config.toml\n") {
		t.Errorf("packaged unit does not run /usr/bin/foyer with the packaged config:\n%s", got)
	}
}

func TestPackagedUnit(t *testing.T) {
	for unit, want := range map[string]string{
		"[Service]\nExecStart=/usr/local/bin/foyer serve\nExecReload=/usr/local/bin/foyer reload $MAINPID\n": "[Service]\nExecStart=/usr/bin/foyer serve\nExecReload=/usr/bin/foyer reload $MAINPID\n",
		"# cp bin/foyer /usr/local/bin/foyer\n[Service]\nExecStart=-/usr/bin/foyer serve\n":                  "# cp bin/foyer /usr/local/bin/foyer\n[Service]\nExecStart=-/usr/bin/foyer serve\n",
	} {
		got, err := packagedUnit([]byte(unit))
		if err != nil || string(got) != want {
			t.Errorf("packagedUnit(%q) = %q, %v; want %q", unit, got, err, want)
		}
	}
	for _, unit := range []string{
		"[Service]\nExecStart=/opt/foyer serve\n",
		"[Service]\nType=notify\n",
	} {
		if got, err := packagedUnit([]byte(unit)); err == nil {
			t.Errorf("packagedUnit(%q) = %q, want an error", unit, got)
		}
	}
}
