//go:build linux

package proc

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"golang.org/x/sys/unix"
)

// TestMain makes the test process the reaper of its orphans, so that a
// grandchild left behind by a reaped child can be waited for here and its
// end observed, not guessed.
func TestMain(m *testing.M) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		panic("child subreaper: " + err.Error())
	}
	os.Exit(m.Run())
}

func TestAttr(t *testing.T) {
	a := Attr(nil)
	if !a.Setpgid || a.Pgid != 0 || a.Pdeathsig != syscall.SIGKILL {
		t.Errorf("Attr(nil) = %+v", a)
	}
	had := &syscall.SysProcAttr{Pgid: 7, Noctty: true, Pdeathsig: syscall.SIGTERM}
	if got := Attr(had); got != had || !got.Setpgid || got.Pgid != 0 || got.Pdeathsig != syscall.SIGKILL || !got.Noctty {
		t.Errorf("Attr kept or set the wrong fields: %+v", got)
	}
}

// startSleeper starts a shell in its own group that starts a sleeping
// child, then runs then. It returns once the sleeper is in the group, with
// the sleeper's pid.
func startSleeper(t *testing.T, then string) (*exec.Cmd, int) {
	t.Helper()
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command("sh", "-c", "sleep 60 </dev/null >/dev/null 2>&1 & echo $!; "+then)
	cmd.Stdout = w
	cmd.SysProcAttr = Attr(nil)
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the sleeper's pid: %v", err)
	}
	sleeper, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("sleeper's pid %q: %v", line, err)
	}
	return cmd, sleeper
}

// TestReap runs a shell in its own group that leaves a sleeping child
// behind and then ends, and checks what Reap says of the shell and that
// the sleeper died with it.
func TestReap(t *testing.T) {
	for _, tc := range []struct {
		name, end string
		code      int
		signal    string
	}{
		{"exit", "exit 3", 3, ""},
		{"exit 0", "exit 0", 0, ""},
		{"signal", "kill -TERM $$", -1, "SIGTERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, sleeper := startSleeper(t, tc.end)
			pgid := cmd.Process.Pid

			code, sig := Reap(cmd)
			if code != tc.code || sig != tc.signal {
				t.Errorf("Reap = %d, %q; want %d, %q", code, sig, tc.code, tc.signal)
			}

			// The sleeper, orphaned into this process, is the last of the group.
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-pgid, &ws, 0, nil)
			if err != nil {
				t.Fatalf("waiting for the group: %v", err)
			}
			if pid != sleeper || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
				t.Errorf("group member %d ended with %v; want the sleeper %d killed by SIGKILL", pid, ws, sleeper)
			}
			if pid, err := unix.Wait4(-pgid, &ws, unix.WNOHANG, nil); !errors.Is(err, unix.ECHILD) {
				t.Errorf("another group member %d left (%v)", pid, err)
			}
			if err := unix.Kill(-pgid, 0); !errors.Is(err, unix.ESRCH) {
				t.Errorf("group %d still there: kill says %v", pgid, err)
			}
		})
	}
}

// TestKillGroup kills a group whose leader waits for its child, and checks
// that the leader died by SIGKILL and the group is gone.
func TestKillGroup(t *testing.T) {
	cmd, _ := startSleeper(t, "wait")
	KillGroup(cmd.Process.Pid)
	if code, sig := Reap(cmd); code != -1 || sig != "SIGKILL" {
		t.Errorf("Reap = %d, %q; want -1, SIGKILL", code, sig)
	}
	// The sleeper was the shell's child or, if the shell died first, an
	// orphan of this process; either way it is gone once waited for.
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(-cmd.Process.Pid, &ws, 0, nil); err != nil {
			if !errors.Is(err, unix.ECHILD) {
				t.Fatalf("waiting for the group: %v", err)
			}
			break
		}
	}
	if err := unix.Kill(-cmd.Process.Pid, 0); !errors.Is(err, unix.ESRCH) {
		t.Errorf("group still there: kill says %v", err)
	}
}

func TestLines(t *testing.T) {
	const max = 16
	long := strings.Repeat("x", max) + strings.Repeat("y", 3*max) + "\n"
	in := "one\ntwo\r\n\n" + long + "after\n" + strings.Repeat("z", max) + "last"
	want := []string{"one", "two", "", strings.Repeat("x", max), "after", strings.Repeat("z", max)}
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
		"failing": func() io.Reader {
			return io.MultiReader(strings.NewReader(in), iotest.ErrReader(errors.New("broken")), strings.NewReader("never\n"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			Lines(r(), max, func(b []byte) { got = append(got, string(b)) })
			if !slices.Equal(got, want) {
				t.Errorf("lines %q; want %q", got, want)
			}
		})
	}
}
