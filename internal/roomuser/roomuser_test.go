package roomuser

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestParseRange(t *testing.T) {
	for in, want := range map[string]Range{
		"":                      {},
		"1879048192-1879113727": {DefaultFirst, DefaultLast},
		"70000":                 {70000, 70000},
		" 70000 - 70009 ":       {70000, 70009},
	} {
		if got, err := ParseRange(in); err != nil || got != want {
			t.Errorf("ParseRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"0-100":                 "root",
		"100-50":                "above last",
		"x":                     "not a range",
		"2147483000-2147483647": "not portable",
	} {
		if _, err := ParseRange(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseRange(%q) = %v, want an error with %q", in, err, why)
		}
	}
	if n := (Range{DefaultFirst, DefaultLast}).Len(); n != 65536 {
		t.Errorf("the default range has %d ids", n)
	}
}

func TestClashes(t *testing.T) {
	r := Range{60000, 60999}
	passwd := []byte("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
	if err := r.Clashes(passwd, nil); err != nil {
		t.Errorf("no clash: %v", err)
	}
	passwd = append(passwd, "game:x:60500:100::/home/game:/bin/sh\n"...)
	if err := r.Clashes(passwd, nil); err == nil || !strings.Contains(err.Error(), "user game has id 60500") {
		t.Errorf("a user in the range: %v", err)
	}
	if err := r.Clashes(nil, []byte("players:x:60001:\n")); err == nil || !strings.Contains(err.Error(), "group players has id 60001") {
		t.Errorf("a group in the range: %v", err)
	}
}

// Run points a command at the program's descriptor, at ProgramFD, with
// the room's user, and keeps what the caller set: its other descriptors
// after that one, its other process attributes. A uid that is not a
// room's, or a program that is not there, is refused.
func TestRun(t *testing.T) {
	other, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	cmd := exec.Command("/bin/sh", "-c", "true")
	cmd.ExtraFiles = []*os.File{other}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	program, err := Run(cmd, 4_000_000_007)
	if err != nil {
		t.Fatal(err)
	}
	defer program.Close()
	if cmd.Path != "/proc/self/fd/3" || len(cmd.ExtraFiles) != 2 || cmd.ExtraFiles[0] != program || cmd.ExtraFiles[1] != other {
		t.Errorf("command at %s with descriptors %v; want /proc/self/fd/3, the program then the caller's", cmd.Path, cmd.ExtraFiles)
	}
	if a := cmd.SysProcAttr; !a.Setpgid || a.Credential == nil ||
		a.Credential.Uid != 4_000_000_007 || a.Credential.Gid != 4_000_000_007 || a.Credential.Groups == nil || len(a.Credential.Groups) != 0 {
		t.Errorf("process attributes %+v, credential %+v; want the caller's, and uid = gid = the room's, no groups", a, a.Credential)
	}
	if _, err := Run(exec.Command("/bin/sh"), 0); err == nil {
		t.Error("uid 0 taken for a room's")
	}
	if _, err := Run(exec.Command(filepath.Join(t.TempDir(), "none")), 4_000_000_007); err == nil {
		t.Error("a program that is not there opened")
	}
}
