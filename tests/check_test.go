package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// foyer --version names the version, the Go release and the platform.
func TestVersion(t *testing.T) {
	out := cliOK(t, "--version")
	if !regexp.MustCompile(`^foyer \S+ \(go\S+ linux/\w+\)\n$`).MatchString(out) {
		t.Errorf("foyer --version: %q", out)
	}
}

// foyer serve --check reads a config as serve would and exits: 0 for one
// serve would start with, 1 with file, line and reason for one it would
// refuse (a misspelt key says which was meant; a lobby rooms cannot be
// reached from is refused, not served).
func TestServeCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.toml", "[lobby]\nlisten = \"127.0.0.1:7777\"\n[supervisor]\nbind = \"127.0.0.1\"\n")
	if out := cliOK(t, "serve", "--check", "--config", good); out != good+": ok\n" {
		t.Errorf("serve --check of a good config: %q", out)
	}
	for name, c := range map[string]struct{ text, want string }{
		"misspelt": {"[supervisor]\nmax_instance = 4\n", "misspelt.toml:2: [supervisor] max_instance: unknown key (did you mean max_instances?)"},
		"ipv6":     {"[lobby]\nlisten = \"[::]:7777\"\n\n[supervisor]\nbind = \"127.0.0.1\"\n", `ipv6.toml:5: [supervisor] bind "127.0.0.1": clients reaching the lobby at :: would be sent to rooms bound to 127.0.0.1 only`},
	} {
		path := write(name+".toml", c.text)
		r := cliRun(t, nil, "serve", "--check", "--config", path)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "refused") {
			t.Errorf("serve --check of %s: exit %d\nstdout %q\nstderr %q\nwant exit 1 and %q", name, r.code, r.stdout, r.stderr, c.want)
		}
	}
}
