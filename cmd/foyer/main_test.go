package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// run runs the foyer command line and returns its exit code and output.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = dispatch(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// helpLayout is what every --help looks like: usage lines, a blank line,
// what the command does, its flags (--help last), and an example.
var helpLayout = regexp.MustCompile(`(?s)^Usage: foyer \S+.*\n\n\S.*\n\nFlags:\n(  --\S+( \S+)?\n {8}\S.*\n)*  --help\n {8}show this help\n\nExample:\n(  \S.*\n)+$`)

func TestEveryCommandHasOneHelpLayout(t *testing.T) {
	for _, c := range commands {
		for _, args := range [][]string{{c.Name, "--help"}, {c.Name, "-h"}, {"help", c.Name}} {
			code, out, errOut := run(t, args...)
			if code != 0 || errOut != "" || !helpLayout.MatchString(out) || !strings.HasPrefix(out, "Usage: foyer "+c.Name) {
				t.Errorf("foyer %s: exit %d, stderr %q, stdout\n%s", strings.Join(args, " "), code, errOut, out)
			}
		}
	}
	for _, flag := range []string{"--help", "-h", "help"} {
		code, out, errOut := run(t, flag)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: foyer COMMAND") || !strings.Contains(out, "\nExample:\n  foyer ") {
			t.Errorf("foyer %s: exit %d, stderr %q, stdout\n%s", flag, code, errOut, out)
		}
	}
}

func TestServeHelpNamesItsFlags(t *testing.T) {
	_, out, _ := run(t, "serve", "--help")
	for _, want := range []string{"Usage: foyer serve [--config PATH] [--ready-json]", "\n  --config PATH\n", "\n  --ready-json\n", "READY=1", "STOPPING=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("foyer serve --help lacks %q:\n%s", want, out)
		}
	}
}

func TestNoCommandIsAUsageError(t *testing.T) {
	code, out, errOut := run(t)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "Usage: foyer COMMAND") {
		t.Errorf("foyer: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", code, out, errOut)
	}
	code, out, errOut = run(t, "bogus")
	if want := "foyer: unknown command \"bogus\"\nRun 'foyer --help' for usage.\n"; code != 2 || out != "" || errOut != want {
		t.Errorf("foyer bogus: exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, want)
	}
}

// Usage errors of every command read alike, count their arguments in
// good English, and end with the way to help.
func TestUsageErrorsOfEveryCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the first line of stderr
	}{
		{[]string{"serve", "extra"}, "foyer serve: takes no arguments, got 1 argument"},
		{[]string{"serve", "a", "b"}, "foyer serve: takes no arguments, got 2 arguments"},
		{[]string{"serve", "--bogus"}, "foyer serve: flag provided but not defined: -bogus"},
		{[]string{"serve", "--config"}, "foyer serve: flag needs an argument: -config"},
		{[]string{"serve", "--ready-json=maybe"}, `foyer serve: invalid boolean value "maybe" for -ready-json: parse error`},
		{[]string{"instance", "x"}, "foyer instance: takes no arguments, got 1 argument"},
		{[]string{"instance", "--bogus"}, "foyer instance: flag provided but not defined: -bogus"},
		{[]string{"join"}, "foyer join: needs [ADDR] ROOM, got 0 arguments"},
		{[]string{"join", "a", "1", "b"}, "foyer join: needs [ADDR] ROOM, got 3 arguments"},
		{[]string{"play", "--ready", "a", "1", "b"}, "foyer play: takes [ADDR] [ROOM], got 3 arguments"},
		{[]string{"stop"}, "foyer stop: needs ROOM, got 0 arguments"},
		{[]string{"logs", "1", "2"}, "foyer logs: needs ROOM, got 2 arguments"},
		{[]string{"drain", "x"}, "foyer drain: takes no arguments, got 1 argument"},
		{[]string{"create", "a", "--", "--json"}, "foyer create: takes at most one ADDR, got 2 arguments"},
	} {
		code, out, errOut := run(t, tc.args...)
		first, rest, _ := strings.Cut(errOut, "\n")
		if code != 2 || out != "" || first != tc.want {
			t.Errorf("foyer %s: exit %d, stdout %q, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
		if wantRest := fmt.Sprintf("Run 'foyer %s --help' for usage.\n", tc.args[0]); rest != wantRest {
			t.Errorf("foyer %s: stderr ends %q, want %q", strings.Join(tc.args, " "), rest, wantRest)
		}
	}
}

// serve takes --config in both GNU forms: a config it refuses shows that
// the flag reached it.
func TestServeConfigFlagForms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(path, []byte("[lobby]\nrate = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "--config", path},
		{"serve", "--config=" + path},
		{"serve", "--ready-json", "--config", path},
		{"serve", "--config", path, "--"},
	} {
		code, out, errOut := run(t, args...)
		if want := "foyer serve: " + path + ":2: [lobby] rate 0: must be above 0\n"; code != 1 || out != "" || errOut != want {
			t.Errorf("foyer %s: exit %d, stdout %q, stderr %q; want 1 and %q", strings.Join(args, " "), code, out, errOut, want)
		}
	}
}
