package tests

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The package test installs Foyer's .deb on this machine with dpkg, as CI
// does: it needs root and fails (never skips) without it. It refuses to
// run where Foyer is already installed or its user exists, and leaves the
// machine as it found it, failed or not.

// What the package installs and what its scripts create.
const (
	debBinary   = "/usr/bin/foyer"
	debConfig   = "/etc/foyer/config.toml"
	debUnit     = "/lib/systemd/system/foyer.service"
	debStateDir = "/var/lib/foyer"
	debUser     = "foyer"
	debToken    = "/etc/foyer/admin-token"
)

// debMade is every path the package or its scripts may make, including
// where systemd and deb-systemd-helper keep a unit's state; none may be
// there before the test or after the purge.
var debMade = []string{
	"/etc/foyer", debStateDir, "/var/lib/private/foyer",
	"/etc/systemd/system/foyer.service",
	"/etc/systemd/system/multi-user.target.wants/foyer.service",
	"/var/lib/systemd/deb-systemd-helper-enabled/foyer.service.dsh-also",
	"/var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/foyer.service",
	"/var/lib/systemd/deb-systemd-helper-masked/foyer.service",
}

// debScanRoots are searched, before and after, for anything named foyer:
// leftovers the list above does not foresee.
var debScanRoots = []string{"/etc", "/var/lib", "/lib/systemd", "/usr/lib/systemd", "/usr/bin", "/usr/sbin"}

// TestDebianPackage builds the .deb as `make deb` does, installs it with
// dpkg -i, checks what it put where, verifies the unit with
// systemd-analyze, serves rooms with the packaged config as the foyer
// user, then removes and purges it and checks that nothing is left.
func TestDebianPackage(t *testing.T) {
	before := debPreflight(t)
	deb := debBuild(t)
	t.Cleanup(func() { debRestore(t, before) })
	debRun(t, "dpkg", "-i", deb)

	uid, gid := debCheckInstalled(t)
	if out := debRun(t, "systemd-analyze", "verify", "--man=no", debUnit); out != "" {
		t.Errorf("systemd-analyze verify %s:\n%s", debUnit, out)
	}
	debServe(t, uid, gid)

	debRun(t, "dpkg", "-r", "foyer")
	if st := debStatus(t); st != "deinstall ok config-files" {
		t.Errorf("after dpkg -r: status %q, want deinstall ok config-files", st)
	}
	for _, p := range []string{debBinary, debUnit} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after dpkg -r, %s: %v, want it gone", p, err)
		}
	}
	if _, err := os.Stat(debConfig); err != nil {
		t.Errorf("after dpkg -r the conffile should stay until purge: %v", err)
	}

	debRun(t, "dpkg", "-P", "foyer")
	if st := debStatus(t); st != "" {
		t.Errorf("after dpkg -P: status %q, want the package unknown", st)
	}
	if left := debLeftovers(t, before); len(left) > 0 {
		t.Errorf("after dpkg -P: left behind: %s", strings.Join(left, ", "))
	}
}

// debRun runs argv, fails the test unless it exits 0, and returns its
// output, stdout and stderr together.
func debRun(t *testing.T, argv ...string) string {
	t.Helper()
	out, err := debTry(argv...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return out
}

// debLockWait bounds the wait for dpkg's lock, which apt holds while it
// installs on a shared machine: a guard against hangs.
const debLockWait = 5 * time.Minute

// debTry runs argv and returns its output, stdout and stderr together. A
// run refused because another package manager holds dpkg's lock is tried
// again.
func debTry(argv ...string) (string, error) {
	deadline := time.Now().Add(debLockWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), cliLimit)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "LC_ALL=C") // dpkg's messages untranslated
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || !bytes.Contains(out, []byte("locked by another process")) || time.Now().After(deadline) {
			return string(out), err
		}
		time.Sleep(time.Second)
	}
}

// debStatus is dpkg's status of the foyer package, "" when dpkg does not
// know it.
func debStatus(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "foyer").Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return "" // dpkg-query: no packages found matching foyer
	}
	if err != nil {
		t.Fatal(err)
	}
	if st := string(out); st != "unknown ok not-installed" {
		return st
	}
	return ""
}

// debPreflight checks that the test may run here and returns the paths
// named foyer that were there before it.
func debPreflight(t *testing.T) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("installing the package needs root; running as uid %d", os.Geteuid())
	}
	for _, tool := range []string{"dpkg", "adduser", "systemd-analyze", "ip", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the package test needs %s (the Makefile's DEB_PACKAGES install it): %v", tool, err)
		}
	}
	if st := debStatus(t); st != "" {
		t.Fatalf("the foyer package is on this machine (%s): the test would replace it (dpkg -P foyer removes it)", st)
	}
	if _, err := user.Lookup(debUser); err == nil {
		t.Fatalf("a %s user exists: the test would delete it", debUser)
	}
	if _, err := user.LookupGroup(debUser); err == nil {
		t.Fatalf("a %s group exists: the test would delete it", debUser)
	}
	for _, p := range debMade {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s is there (%v): the test would delete it", p, err)
		}
	}
	return debScan(t)
}

// debScan returns every path under debScanRoots whose name has "foyer" in
// it.
func debScan(t *testing.T) []string {
	t.Helper()
	var found []string
	for _, root := range debScanRoots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), "foyer") {
				found = append(found, p)
			}
			return nil // unreadable corners and vanishing files are not leftovers
		})
	}
	return found
}

// debLeftovers lists what the package or its scripts left: its paths, its
// user and group, its stat override, paths named foyer that were not
// there before.
func debLeftovers(t *testing.T, before []string) []string {
	t.Helper()
	var left []string
	for _, p := range debScan(t) {
		if !slices.Contains(before, p) && !slices.Contains(left, p) {
			left = append(left, p)
		}
	}
	for _, p := range debMade {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) && !slices.Contains(left, p) {
			left = append(left, p)
		}
	}
	if _, err := user.Lookup(debUser); err == nil {
		left = append(left, "user "+debUser)
	}
	if _, err := user.LookupGroup(debUser); err == nil {
		left = append(left, "group "+debUser)
	}
	if out, _ := exec.Command("dpkg-statoverride", "--list", debConfig).Output(); len(out) > 0 {
		left = append(left, "stat override of "+debConfig)
	}
	return left
}

// debRestore undoes the install, however far the test got: a purge, and
// if that fails, a purge without the package's scripts and the removal of
// what they made. Preflight made sure none of it was there before.
func debRestore(t *testing.T, before []string) {
	if u, err := user.Lookup(debUser); err == nil {
		debKill(t, u.Uid)
	}
	if debStatus(t) != "" {
		if out, err := debTry("dpkg", "-P", "foyer"); err != nil {
			t.Errorf("cleanup: dpkg -P foyer: %v\n%s", err, out)
			for _, s := range []string{"prerm", "postrm"} {
				os.Remove("/var/lib/dpkg/info/foyer." + s)
			}
			if out, err := debTry("dpkg", "-P", "--force-remove-reinstreq", "foyer"); err != nil {
				t.Errorf("cleanup: dpkg -P without scripts: %v\n%s", err, out)
			}
		}
	}
	left := debLeftovers(t, before)
	for _, l := range left {
		var err error
		switch {
		case l == "user "+debUser:
			_, err = debTry("userdel", debUser)
		case l == "group "+debUser:
			if _, lookup := user.LookupGroup(debUser); lookup == nil { // userdel may have taken it
				_, err = debTry("groupdel", debUser)
			}
		case strings.HasPrefix(l, "stat override"):
			_, err = debTry("dpkg-statoverride", "--remove", debConfig)
		default:
			err = os.RemoveAll(l)
		}
		if err != nil {
			t.Errorf("cleanup: removing %s: %v", l, err)
		}
	}
	if len(left) > 0 {
		t.Logf("cleanup removed what was left: %s", strings.Join(left, ", "))
	}
}

// debKill kills every process of the user uid, the user the test created,
// and waits until they are gone: userdel refuses a user with processes,
// and a failed test may leave a room running (it dies with its lobby, but
// not at once).
func debKill(t *testing.T, uid string) {
	deadline := time.Now().Add(cliLimit)
	for {
		pids, _ := filepath.Glob("/proc/[0-9]*/status")
		alive := 0
		for _, p := range pids {
			status, err := os.ReadFile(p)
			_, rest, ok := bytes.Cut(status, []byte("\nUid:"))
			f := strings.Fields(string(rest))
			if err != nil || !ok || len(f) == 0 || f[0] != uid || bytes.Contains(status, []byte("\nState:\tZ")) {
				continue // not the user's, or a zombie: dead already
			}
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			syscall.Kill(pid, syscall.SIGKILL)
			alive++
		}
		if alive == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("cleanup: %d processes of uid %s outlive SIGKILL", alive, uid)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// debBuild builds the package from the test's foyer binary with the
// Makefile's program, and checks its name: foyer_VERSION_ARCH.deb.
func debBuild(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "run", "./packaging", "--binary", bin, "--out", t.TempDir())
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./packaging: %v\n%s", err, stderr.String())
	}
	deb := strings.TrimSpace(string(out))
	name := regexp.MustCompile(`^foyer_[0-9][A-Za-z0-9.+~]*_` + runtime.GOARCH + `\.deb$`)
	if !name.MatchString(filepath.Base(deb)) {
		t.Fatalf("package %q is not named foyer_VERSION_%s.deb", deb, runtime.GOARCH)
	}
	t.Logf("built %s", filepath.Base(deb))
	return deb
}

// debCheckInstalled checks the installed package: its status and conffile,
// each file's owner, mode and content, the foyer user; it returns the
// user's uid and gid.
func debCheckInstalled(t *testing.T) (uid, gid int) {
	t.Helper()
	if st := debStatus(t); st != "install ok installed" {
		t.Fatalf("after dpkg -i: status %q", st)
	}
	u, err := user.Lookup(debUser)
	if err != nil {
		t.Fatalf("after dpkg -i: %v", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	g, err := user.LookupGroup(debUser)
	if err != nil || g.Gid != u.Gid {
		t.Fatalf("after dpkg -i: group %s %v (%v), want the user's own group %s", debUser, g, err, u.Gid)
	}
	// A system user (below Debian's first ordinary uid) that cannot log in.
	passwd := strings.Split(strings.TrimSpace(debRun(t, "getent", "passwd", debUser)), ":")
	if uid >= 1000 || u.HomeDir != debStateDir || passwd[len(passwd)-1] != "/usr/sbin/nologin" {
		t.Errorf("foyer user %s: want a system uid, home %s, shell /usr/sbin/nologin", strings.Join(passwd, ":"), debStateDir)
	}

	for _, f := range []struct {
		path     string
		uid, gid int
		mode     fs.FileMode
	}{
		{debBinary, 0, 0, 0o755},
		{debConfig, 0, gid, 0o640}, // the foyer group reads it; others do not
		{debUnit, 0, 0, 0o644},
		{debStateDir, uid, gid, fs.ModeDir | 0o750},
		{debToken, 0, gid, 0o640}, // made at install: root and the service read it
	} {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Errorf("after dpkg -i: %v", err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != f.uid || int(st.Gid) != f.gid || fi.Mode() != f.mode {
			t.Errorf("%s: owner %d:%d mode %v, want %d:%d %v", f.path, st.Uid, st.Gid, fi.Mode(), f.uid, f.gid, f.mode)
		}
	}

	if got, want := debRead(t, debBinary), debRead(t, bin); !bytes.Equal(got, want) {
		t.Errorf("%s is not the binary the package was built from", debBinary)
	}
	if unit := debRead(t, debUnit); !regexp.MustCompile(`(?m)^ExecStart=` + debBinary + ` serve --config ` + debConfig + `$`).Match(unit) {
		t.Errorf("%s does not run %s serve --config %s:\n%s", debUnit, debBinary, debConfig, unit)
	}
	// The packaged config turns state_dir on where config.toml has the
	// key.
	conf := debRead(t, debConfig)
	if bytes.Contains(debRead(t, "../config.toml"), []byte("\nstate_dir = \"\"\n")) &&
		!bytes.Contains(conf, []byte("\nstate_dir = \""+debStateDir+"\"\n")) {
		t.Errorf("%s does not set state_dir = %q", debConfig, debStateDir)
	}

	// The admin token: random, long enough, and the packaged config's.
	if token := strings.TrimSpace(string(debRead(t, debToken))); len(token) != 43 {
		t.Errorf("%s holds %d characters, want a token of 43", debToken, len(token))
	}
	if !bytes.Contains(conf, []byte("\ntoken_file = \""+debToken+"\"\n")) {
		t.Errorf("%s does not set token_file = %q", debConfig, debToken)
	}

	// dpkg knows the config as a conffile, unchanged since installed.
	conffiles := strings.Fields(debRun(t, "dpkg-query", "-W", "-f=${Conffiles}", "foyer"))
	if want := []string{debConfig, fmt.Sprintf("%x", md5.Sum(conf))}; !slices.Equal(conffiles, want) {
		t.Errorf("conffiles %q, want %q", conffiles, want)
	}
	return uid, gid
}

func debRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// debServe runs the installed binary as the foyer user with the packaged
// config, unchanged, in a network namespace of its own: its default ports
// (UDP 7777, admin 9477 on loopback) collide with nothing there. The
// installed client commands list its rooms and create one.
func debServe(t *testing.T, uid, gid int) {
	t.Helper()
	ns := fmt.Sprintf("fydeb%d%04x", os.Getpid()%100000, rand.IntN(1<<16))
	lanRun(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	lanRun(t, "ip", "-n", ns, "link", "set", "lo", "up")
	inNS := []string{"ip", "netns", "exec", ns}

	// ip netns exec and setpriv each exec the next: the process started is
	// foyer serve itself.
	cmd := exec.Command(inNS[0], append(inNS[1:], "setpriv", "--reuid="+debUser, "--regid="+debUser, "--init-groups",
		debBinary, "serve", "--ready-json", "--config", debConfig)...)
	cmd.Dir = "/"
	s, ready, line, _ := readyServeJSON(t, cmd)
	if len(ready.Lobby) != 1 || ready.Lobby[0] != netip.MustParseAddrPort("0.0.0.0:7777") ||
		ready.Admin != netip.MustParseAddrPort("127.0.0.1:9477") {
		t.Errorf("ready line %s: want the packaged config's lobby 0.0.0.0:7777 and admin 127.0.0.1:9477", line)
	}
	status := string(debRead(t, fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)))
	for _, want := range []string{fmt.Sprintf("\nUid:\t%d\t%d\t%d\t%d\n", uid, uid, uid, uid), fmt.Sprintf("\nGid:\t%d\t%d\t%d\t%d\n", gid, gid, gid, gid)} {
		if !strings.Contains(status, want) {
			t.Errorf("foyer serve does not run as %s (%d:%d):\n%s", debUser, uid, gid, status)
			break
		}
	}

	client := func(args ...string) string {
		t.Helper()
		return debRun(t, append(append(inNS, debBinary), args...)...)
	}
	// The admin listener asks for the token made at install.
	token := strings.TrimSpace(string(debRead(t, debToken)))
	inside := &http.Client{Timeout: cliLimit, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = inNetns(ns, func() error { c, err = (&net.Dialer{}).DialContext(ctx, network, addr); return err })
			return c, err
		}}}
	for auth, want := range map[string]int{"": 401, "Bearer " + token: 200} {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:9477/healthz", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		code := 0
		resp, err := inside.Do(req)
		if err == nil {
			resp.Body.Close()
			code = resp.StatusCode
		}
		if code != want {
			t.Errorf("the packaged lobby's /healthz with %q: %d (%v), want %d", auth, code, err, want)
		}
	}

	var rooms cliRoomsJSON
	cliDecode(t, client("rooms", "--json"), &rooms)
	if len(rooms.Rooms) != 0 {
		t.Errorf("a fresh lobby lists rooms: %+v", rooms)
	}
	var seat cliSeatJSON
	cliDecode(t, client("create", "--json"), &seat)
	cliDecode(t, client("rooms", "--json"), &rooms)
	if len(rooms.Rooms) != 1 || rooms.Rooms[0].ID != seat.Room || rooms.Rooms[0].Port != seat.Port {
		t.Errorf("after creating room %d on port %d, foyer rooms lists %+v", seat.Room, seat.Port, rooms.Rooms)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
}
