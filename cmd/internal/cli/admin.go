package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// defaultAdmin is the admin listener the operator commands talk to when
// given none: [admin] listen's default.
const defaultAdmin = "127.0.0.1:9477"

// adminReplyLimit bounds what an operator command reads of an answer
// other than /rooms: a room's log is at most 1000 lines of 4 KiB.
const adminReplyLimit = 8 << 20

// adminFlags are the flags of every command that talks to an admin
// listener.
type adminFlags struct {
	addr, tokenFile string
	timeout         time.Duration
}

// adminFlags adds --admin, --token-file and --timeout.
func (c *Command) adminFlags() *adminFlags {
	f := &adminFlags{}
	c.Flags.StringVar(&f.addr, "admin", defaultAdmin, "the admin listener's `address` (host:port or URL)")
	c.Flags.StringVar(&f.tokenFile, "token-file", "", "the `file` holding the admin listener's bearer token ([admin] token_file)")
	c.Flags.DurationVar(&f.timeout, "timeout", 5*time.Second, "how long to wait for the admin listener's answer")
	return f
}

// adminBase is the URL of the admin listener at addr, without a trailing
// slash: "http://" is added to an address without a scheme.
func adminBase(addr string) string {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return strings.TrimSuffix(addr, "/")
}

// adminCall asks the admin listener of f for method path, with the token
// if f names its file, and returns the answer's status and body (at most
// limit bytes). Errors name the URL; a listener that wants a token says
// how to give it.
func adminCall(f *adminFlags, method, path string, limit int64) (int, []byte, error) {
	return adminCallTo(adminBase(f.addr), f.tokenFile, f.timeout, method, path, limit)
}

func adminCallTo(base, tokenFile string, timeout time.Duration, method, path string, limit int64) (int, []byte, error) {
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("admin %s: %w", base, err)
	}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // the URL is said once, below
	}
	if err != nil {
		return 0, nil, fmt.Errorf("admin %s%s: %w", base, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return 0, nil, fmt.Errorf("admin %s%s: %w", base, path, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return 0, nil, fmt.Errorf("admin %s%s: the admin listener wants its token: give the file that holds it "+
			"with --token-file (the Debian package's is /etc/foyer/admin-token)", base, path)
	}
	return resp.StatusCode, body, nil
}

// answer is the first line of an admin listener's text answer.
func answer(body []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	return line
}

// adminPost posts to path on the admin listener and returns the first line
// of its answer; a status other than want is an error saying that line.
func adminPost(af *adminFlags, path string, want int) (string, error) {
	status, body, err := adminCall(af, http.MethodPost, path, adminReplyLimit)
	if err != nil {
		return "", err
	}
	if status != want {
		return "", errors.New(answer(body))
	}
	return answer(body), nil
}

var stopHelp = Help{
	Usage: []string{"foyer stop [flags] ROOM"},
	About: `Stop room ROOM on the host whose admin listener --admin names: its game
is asked to stop (players see the match end) and the room is killed whole
after [supervisor] stop_grace. The room is reaped with the cause
"operator". In a cluster, stop a room at its own host's admin listener
('foyer rooms --admin' shows which host runs it).`,
	Example: []string{
		"foyer stop 1700000042",
		"foyer stop --admin 10.0.0.5:9477 --token-file /etc/foyer/admin-token 1700000042",
	},
}

// Stop is foyer stop.
func Stop(args []string, stdout, stderr io.Writer) int {
	c := New("stop", stopHelp, stdout, stderr)
	af := c.adminFlags()
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.UsageError("needs ROOM, got %s", count(len(pos), "argument"))
	}
	id, err := parseRoomID(pos[0])
	if err != nil {
		return c.UsageError("%v", err)
	}
	said, err := adminPost(af, fmt.Sprintf("/rooms/%d/stop", id), http.StatusAccepted)
	if err != nil {
		return c.Fail(fmt.Errorf("stop room %d: %w", id, err))
	}
	fmt.Fprintln(stdout, said)
	return ExitOK
}

var drainHelp = Help{
	Usage: []string{"foyer drain [flags]", "foyer drain --off [flags]"},
	About: `Drain the host whose admin listener --admin names: it starts no new room
(a CREATE there is refused; in a cluster it goes to another host), and the
rooms that run play on until they end. /healthz answers 503 from then on,
"draining: N rooms play on", then "drained: no room left", so that a load
balancer sends players elsewhere and an upgrade script can wait. With
--wait, drain waits up to that long for the last room to end, and exits 1
if one is left. --off takes rooms again. A drain lasts until --off or the
lobby's restart.`,
	Example: []string{
		"foyer drain --wait 30m && systemctl restart foyer",
		"foyer drain --off",
	},
}

// Drain is foyer drain.
func Drain(args []string, stdout, stderr io.Writer) int {
	c := New("drain", drainHelp, stdout, stderr)
	af := c.adminFlags()
	off := c.Flags.Bool("off", false, "take rooms again")
	wait := c.Flags.Duration("wait", 0, "wait up to this long for the last room to end")
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if code, ok := c.NoArgs(pos); !ok {
		return code
	}
	if *off && *wait > 0 {
		return c.UsageError("--wait waits for a drain; it does not go with --off")
	}
	path := "/drain"
	if *off {
		path = "/resume"
	}
	state, err := adminPost(af, path, http.StatusOK)
	if err != nil {
		return c.Fail(fmt.Errorf("%s: %w", path, err))
	}
	fmt.Fprintln(stdout, state)
	if *wait <= 0 || strings.HasPrefix(state, "drained") {
		return ExitOK
	}
	deadline := time.Now().Add(*wait)
	for time.Now().Before(deadline) {
		time.Sleep(min(time.Second, time.Until(deadline)))
		_, body, err := adminCall(af, http.MethodGet, "/healthz", adminReplyLimit)
		if err != nil {
			return c.Fail(err)
		}
		if now := answer(body); now != state {
			state = now
			fmt.Fprintln(stdout, state)
		}
		switch {
		case strings.HasPrefix(state, "drained"):
			return ExitOK
		case !strings.HasPrefix(state, "draining"):
			return c.Fail(fmt.Errorf("the host is no longer draining: %s", state))
		}
	}
	return c.Fail(fmt.Errorf("rooms still play after %v: %s", *wait, state))
}

var logsHelp = Help{
	Usage: []string{"foyer logs [flags] ROOM"},
	About: `Print the last lines of room ROOM's log: what its game server printed (a
foreign server's output as it printed it), kept in the room's directory
while it runs and, once it ended, by the lobby (with [supervisor]
state_dir, across restarts of the lobby). Characters that are not text are
shown as U+FFFD. The log is read from the admin listener --admin names; in
a cluster, from the host that runs (or ran) the room.`,
	Example: []string{
		"foyer logs 1700000042",
		"foyer logs --lines 500 --admin 10.0.0.5:9477 --token-file /etc/foyer/admin-token 1700000042",
	},
}

// Logs is foyer logs.
func Logs(args []string, stdout, stderr io.Writer) int {
	c := New("logs", logsHelp, stdout, stderr)
	af := c.adminFlags()
	lines := c.Flags.Int("lines", 100, "how many of the last `lines` to print (at most 1000)")
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.UsageError("needs ROOM, got %s", count(len(pos), "argument"))
	}
	id, err := parseRoomID(pos[0])
	if err != nil {
		return c.UsageError("%v", err)
	}
	if *lines < 1 || *lines > 1000 {
		return c.UsageError("--lines must be 1 to 1000, not %d", *lines)
	}
	status, body, err := adminCall(af, http.MethodGet, fmt.Sprintf("/rooms/%d/log?lines=%d", id, *lines), adminReplyLimit)
	switch {
	case err != nil:
		return c.Fail(err)
	case status != http.StatusOK:
		return c.Fail(fmt.Errorf("logs of room %d: %s", id, answer(body)))
	}
	stdout.Write(body)
	return ExitOK
}
