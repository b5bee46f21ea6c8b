package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/foyerlobby/foyer/cmd/internal/cli"
)

var tokenHelp = cli.Help{
	Usage: []string{"foyer token [--file PATH]"},
	About: `Print a new random admin token: 32 random bytes, 43 characters of
base64url, for [admin] token or token_file. With --file it is written to
PATH instead (mode 0640, a new file: an existing one is kept, and the
command says so and succeeds), which is how the Debian package makes
/etc/foyer/admin-token at install.`,
	Example: []string{
		"foyer token > /etc/foyer/admin-token",
		"foyer token --file /etc/foyer/admin-token && chgrp foyer /etc/foyer/admin-token",
	},
}

// runToken prints or writes a new admin token.
func runToken(args []string, stdout, stderr io.Writer) int {
	c := cli.New("token", tokenHelp, stdout, stderr)
	file := c.Flags.String("file", "", "write the token to `PATH` (mode 0640) unless it exists, instead of printing it")
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if code, ok := c.NoArgs(pos); !ok {
		return code
	}
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand panics rather)
	token := base64.RawURLEncoding.EncodeToString(b)
	if *file == "" {
		fmt.Fprintln(stdout, token)
		return cli.ExitOK
	}
	// O_EXCL: never over an existing file, nor through a link.
	f, err := os.OpenFile(*file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if errors.Is(err, fs.ErrExist) {
		fmt.Fprintf(stderr, "foyer token: %s exists: kept as it is\n", *file)
		return cli.ExitOK
	}
	if err == nil {
		// The mode asked for, whatever the umask.
		if err = f.Chmod(0o640); err == nil {
			_, err = fmt.Fprintln(f, token)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "foyer token: %v\n", err)
		return cli.ExitFail
	}
	return cli.ExitOK
}
