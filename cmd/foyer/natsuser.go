//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/foyerlobby/foyer/cluster"
	"github.com/foyerlobby/foyer/cmd/internal/cli"
)

var natsUserHelp = cli.Help{
	Usage: []string{"foyer nats-user HOST --seed-file PATH"},
	About: `Make the NATS user of cluster host HOST, for a NATS server of one's own
(the embedded server makes its hosts' users itself): a new nkey, whose
seed goes to PATH (mode 0600; an existing seed file is kept and used),
for HOST's [cluster] nkey; and, on stdout, the user's entry for the
server's configuration, with the permissions HOST needs and no more
(its own keys and subjects; see docs/cluster.md), to go in
authorization { users = [ ... ] }.`,
	Example: []string{
		"foyer nats-user b --seed-file b.nk >> users.conf",
	},
}

// runNATSUser makes a host's NATS user.
func runNATSUser(args []string, stdout, stderr io.Writer) int {
	c := cli.New("nats-user", natsUserHelp, stdout, stderr)
	seed := c.Flags.String("seed-file", "", "the `PATH` of the host's seed file: made if missing")
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.UsageError("want one host name")
	}
	if *seed == "" {
		return c.UsageError("--seed-file is needed")
	}
	host := pos[0]
	if err := cluster.CheckHost(host); err != nil {
		return c.UsageError("%v", err)
	}
	kp, err := cluster.ReadSeed(*seed)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err = cluster.NewSeedFile(*seed); err == nil {
			kp, err = cluster.ReadSeed(*seed)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "foyer nats-user: %v\n", err)
		return cli.ExitFail
	}
	pub, _ := kp.PublicKey()
	fmt.Fprint(stdout, cluster.ServerUser(host, pub))
	return cli.ExitOK
}
