//go:build linux

package proc

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A handle names its process by pid and start time: another start time
// is refused, a process that exits is seen to, and a signal through it
// reaches that process.
func TestHandle(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = GroupAttr(nil)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cmd.Process.Pid, st.StartTicks+1); !errors.Is(err, ErrNotSame) {
		t.Fatalf("Open with another start time: %v", err)
	}
	h, err := Open(cmd.Process.Pid, st.StartTicks)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Exited():
		t.Fatal("exited while it runs")
	case <-time.After(50 * time.Millisecond):
	}
	h.SignalGroup(unix.SIGTERM)
	select {
	case <-h.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("no exit seen after SIGTERM")
	}
	if code, sig := Reap(cmd); code != -1 || sig != "SIGTERM" {
		t.Fatalf("Reap = %d, %q", code, sig)
	}
	h.Close()
	if _, err := Open(cmd.Process.Pid, st.StartTicks); !errors.Is(err, os.ErrNotExist) && !errors.Is(err, ErrNotSame) {
		t.Fatalf("Open of a process gone: %v", err)
	}
}
