//go:build linux

package main

import (
	"bytes"
	"strings"
	"testing"
)

// foyer-room runs "instance" as foyer does, says its version, and
// answers anything else with its usage and exit status 2.
func TestDispatch(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		code         int
		stdout, errs string // what each begins with
	}{
		{nil, 2, "", "Usage: foyer-room instance [flags]\n"},
		{[]string{"serve"}, 2, "", "Usage: foyer-room instance [flags]\n"},
		{[]string{"--version"}, 0, "foyer-room ", ""},
		{[]string{"instance", "--help"}, 0, "Usage: foyer instance\n", ""},
		{[]string{"instance", "x"}, 2, "", "foyer instance: takes no arguments, got 1 argument\n"},
	} {
		var out, errOut bytes.Buffer
		code := dispatch(tc.args, &out, &errOut)
		if code != tc.code || !strings.HasPrefix(out.String(), tc.stdout) || !strings.HasPrefix(errOut.String(), tc.errs) ||
			(tc.stdout == "") != (out.Len() == 0) || (tc.errs == "") != (errOut.Len() == 0) {
			t.Errorf("foyer-room %q: exit %d, stdout %q, stderr %q; want %d, %q..., %q...", tc.args, code, out.String(), errOut.String(), tc.code, tc.stdout, tc.errs)
		}
	}
}
