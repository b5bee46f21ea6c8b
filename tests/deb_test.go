package tests

import (
	"bufio"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/logtest"
	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/supervisor"
)

// The package test installs Foyer's .deb with dpkg, as an admin would,
// but never on this machine's own /: in a throwaway root (debRoot) that
// starts as a copy of it and is gone when the test ends. It needs root
// (for the root's mounts) and Debian's dpkg, adduser and systemd. It
// refuses to run where Foyer is already installed or its user exists,
// since the copy would not show a fresh install, and it checks at its end
// that this machine's packages, users, groups and /usr/bin are unchanged.

// What the package installs and what its scripts create.
const (
	debBinary   = "/usr/bin/foyer"
	debRoomBin  = "/usr/bin/" + supervisor.RoomProgram // what foyer serve runs its rooms from
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

// TestDebianPackage builds the .deb as `make deb` does and, in a
// throwaway root, installs it with dpkg -i, checks what it put where,
// verifies the unit with systemd-analyze, serves rooms with the packaged
// config as the foyer user, then removes and purges it and checks that
// nothing is left. The root is an overlay of this machine's / whose upper
// layer is a tmpfs, in mount and network namespaces of its own (with
// private propagation) that end with the test: dpkg, adduser and the
// package's scripts write there alone. Last, the test checks that this
// machine's dpkg -l, /etc/passwd, /etc/group and /usr/bin are as they
// were.
func TestDebianPackage(t *testing.T) {
	debRequire(t)
	debHostUnchanged(t)
	deb := debBuild(t)
	r := newDebRoot(t)
	before := debPreflight(t, r)
	r.run(t, "dpkg", "-i", r.copyIn(t, deb))

	uid, gid := debCheckInstalled(t, r)
	if out := r.run(t, "systemd-analyze", "verify", "--man=no", debUnit); out != "" {
		t.Errorf("systemd-analyze verify %s:\n%s", debUnit, out)
	}
	debServe(t, r, uid, gid)

	r.run(t, "dpkg", "-r", "foyer")
	if st := debStatus(t, r); st != "deinstall ok config-files" {
		t.Errorf("after dpkg -r: status %q, want deinstall ok config-files", st)
	}
	for _, p := range []string{debBinary, debUnit} {
		if _, err := r.fs.Lstat(rel(p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after dpkg -r, %s: %v, want it gone", p, err)
		}
	}
	if _, err := r.fs.Stat(rel(debConfig)); err != nil {
		t.Errorf("after dpkg -r the conffile should stay until purge: %v", err)
	}

	r.run(t, "dpkg", "-P", "foyer")
	if st := debStatus(t, r); st != "" {
		t.Errorf("after dpkg -P: status %q, want the package unknown", st)
	}
	if left := debLeftovers(t, r, before); len(left) > 0 {
		t.Errorf("after dpkg -P: left behind: %s", strings.Join(left, ", "))
	}
}

// debRequire requires what the test runs: root, for the throwaway root's
// mounts and its network namespace, and the tools it runs.
func debRequire(t *testing.T) {
	t.Helper()
	requiretest.Root(t)
	requiretest.Netns(t)
	for _, tool := range []string{"dpkg", "dpkg-query", "adduser", "systemd-analyze", "getent", "unshare", "nsenter", "chroot", "setpriv"} {
		requiretest.Command(t, tool)
	}
}

// debHolder is the script of a debRoot's holder, run by unshare in mount
// and network namespaces of its own, with private propagation: no mount
// it makes reaches this machine's namespace. $1 is an empty directory. A
// tmpfs there takes the overlay's upper layer (a tmpfs can be one
// whatever filesystem /tmp is on, an overlay included) and the merged
// root, at $1/root; the root's /run and /tmp are tmpfs too, so that its
// scripts see no systemd and no runtime state of this machine (a postinst
// that found /run/systemd/system would start the service on it). The
// holder then waits for its stdin to close: the namespaces, and every
// mount in them, go with it.
const debHolder = `set -e
mount -t tmpfs -o mode=0700 foyer-deb "$1"
mkdir "$1/upper" "$1/work" "$1/root"
chmod 0755 "$1/upper" # the root's own mode, which the foyer user walks
mount -t overlay foyer-deb -o "lowerdir=/,upperdir=$1/upper,workdir=$1/work" "$1/root"
for m in proc sys dev; do mount --rbind "/$m" "$1/root/$m"; done
mount -t tmpfs -o mode=0755 foyer-deb "$1/root/run"
mount -t tmpfs -o mode=1777 foyer-deb "$1/root/tmp"
ip link set lo up
echo ready
exec cat >/dev/null
`

// debRoot is a throwaway root: an overlay whose lower layer is this
// machine's / and whose upper layer takes every write, in namespaces a
// holder process keeps (see debHolder). Commands run in it with nsenter
// and chroot, as root unless they drop it; the test reads its files
// through the holder's /proc/PID/root, with os.Root, so that no symbolic
// link in it leads to this machine's files.
type debRoot struct {
	holder *exec.Cmd
	stdin  io.Closer
	dir    string   // the merged root, in the holder's mount namespace
	fs     *os.Root // the merged root
}

// debReady bounds the wait for the holder's mounts.
const debReady = 30 * time.Second

// newDebRoot makes a throwaway root that lives as long as the test.
func newDebRoot(t *testing.T) *debRoot {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("unshare", "--mount", "--net", "--propagation", "private", "sh", "-c", debHolder, "sh", dir)
	// The holder dies with the test process, and its namespaces with it:
	// forked from the fork thread, which lives as long as the process (a
	// parent-death signal follows the thread that forks).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr logtest.Buffer
	cmd.Stderr = &stderr
	if err := proc.StartOnForkThread(cmd); err != nil {
		t.Fatal(err)
	}
	r := &debRoot{holder: cmd, stdin: stdin, dir: filepath.Join(dir, "root")}
	t.Cleanup(func() { r.discard(t) })
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if line != "ready\n" {
			t.Fatalf("the throwaway root could not be made (%q):\n%s", line, stderr.String())
		}
	case <-time.After(debReady):
		t.Fatalf("the throwaway root was not made within %v:\n%s", debReady, stderr.String())
	}
	// Private propagation keeps the root's mounts, all of them named
	// foyer-deb or bound below those, out of this machine's namespace.
	if mi := debRead(t, "/proc/self/mountinfo"); strings.Contains(string(mi), " foyer-deb ") {
		t.Fatalf("the throwaway root's mounts reached this machine's mount namespace:\n%s", mi)
	}
	if r.fs, err = os.OpenRoot(fmt.Sprintf("/proc/%d/root%s", cmd.Process.Pid, r.dir)); err != nil {
		t.Fatal(err)
	}
	return r
}

// discard kills whatever still runs in the root (a failed test may leave
// foyer serve or a room), then ends the holder, and with it the
// namespaces and every mount in them.
func (r *debRoot) discard(t *testing.T) {
	if r.fs != nil {
		r.fs.Close()
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", r.holder.Process.Pid))
	for deadline := time.Now().Add(cliLimit); err == nil; time.Sleep(100 * time.Millisecond) {
		pids := r.inside(ns)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("cleanup: processes %v in the throwaway root outlive SIGKILL", pids)
			break
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	r.stdin.Close()
	r.holder.Wait()
}

// inside returns the live processes, other than the holder, in the mount
// namespace ns.
func (r *debRoot) inside(ns string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == r.holder.Process.Pid {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/mnt"); err == nil && l == ns {
			status, _ := os.ReadFile("/proc/" + e.Name() + "/status")
			if !strings.Contains(string(status), "\nState:\tZ") { // a zombie is dead already
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// rel is the path p of the root relative to it, as os.Root takes it.
func rel(p string) string { return strings.TrimPrefix(p, "/") }

// command returns argv to run as root in the root, in its network
// namespace. nsenter and chroot exec what follows: the process started
// is argv's. The root's own PATH finds what dpkg and the scripts run, and
// its own /tmp takes their temporary files.
func (r *debRoot) command(ctx context.Context, argv ...string) *exec.Cmd {
	enter := []string{"--target", strconv.Itoa(r.holder.Process.Pid), "--mount", "--net", "chroot", r.dir}
	cmd := exec.CommandContext(ctx, "nsenter", append(enter, argv...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", // dpkg's messages untranslated
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"TMPDIR=/tmp") // the root's own: this process's is not in it
	return cmd
}

// try runs argv in the root and returns its output, stdout and stderr
// together.
func (r *debRoot) try(argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cliLimit)
	defer cancel()
	out, err := r.command(ctx, argv...).CombinedOutput()
	return string(out), err
}

// output runs argv in the root and returns its standard output; an error
// carries what it wrote on its standard error.
func (r *debRoot) output(argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cliLimit)
	defer cancel()
	cmd := r.command(ctx, argv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(out), err
}

// run runs argv in the root, fails the test unless it exits 0, and
// returns its output, stdout and stderr together.
func (r *debRoot) run(t *testing.T, argv ...string) string {
	t.Helper()
	out, err := r.try(argv...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return out
}

// copyIn copies the file at path into the root's /tmp and returns its
// path there.
func (r *debRoot) copyIn(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	in := "/tmp/" + filepath.Base(path)
	if err := r.fs.WriteFile(rel(in), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// read returns the content of the root's file p.
func (r *debRoot) read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := r.fs.ReadFile(rel(p))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// getent returns the fields of the root's entry for name in database db
// (passwd, group), nil when it has none.
func (r *debRoot) getent(t *testing.T, db, name string) []string {
	t.Helper()
	out, err := r.output("getent", db, name)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		return nil // getent: no such key
	}
	if err != nil {
		t.Fatalf("getent %s %s: %v\n%s", db, name, err, out)
	}
	return strings.Split(strings.TrimSpace(out), ":")
}

// debStatus is dpkg's status of the foyer package in the root, "" when
// dpkg does not know it.
func debStatus(t *testing.T, r *debRoot) string {
	t.Helper()
	out, err := r.output("dpkg-query", "-W", "-f=${Status}", "foyer")
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return "" // dpkg-query: no packages found matching foyer
	}
	if err != nil {
		t.Fatal(err)
	}
	if out != "unknown ok not-installed" {
		return out
	}
	return ""
}

// debPreflight checks that the root, a copy of this machine, has no
// trace of Foyer's package, and returns the paths named foyer in it.
func debPreflight(t *testing.T, r *debRoot) []string {
	t.Helper()
	if st := debStatus(t, r); st != "" {
		t.Fatalf("the foyer package is on this machine (%s): the test, in a copy of it, would not show a fresh install (dpkg -P foyer removes it)", st)
	}
	if r.getent(t, "passwd", debUser) != nil {
		t.Fatalf("a %s user exists on this machine: the test, in a copy of it, would not show the package making it", debUser)
	}
	if r.getent(t, "group", debUser) != nil {
		t.Fatalf("a %s group exists on this machine: the test, in a copy of it, would not show the package making it", debUser)
	}
	for _, p := range debMade {
		if _, err := r.fs.Lstat(rel(p)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s is on this machine (%v): the test, in a copy of it, could not tell the package's from it", p, err)
		}
	}
	return debScan(r)
}

// debScan returns every path of the root under debScanRoots whose name
// has "foyer" in it.
func debScan(r *debRoot) []string {
	var found []string
	for _, root := range debScanRoots {
		fs.WalkDir(r.fs.FS(), rel(root), func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), "foyer") {
				found = append(found, "/"+p)
			}
			return nil // unreadable corners and vanishing files are not leftovers
		})
	}
	return found
}

// debLeftovers lists what the package or its scripts left in the root:
// its paths, its user and group, its stat override, paths named foyer
// that were not there before.
func debLeftovers(t *testing.T, r *debRoot, before []string) []string {
	t.Helper()
	var left []string
	for _, p := range debScan(r) {
		if !slices.Contains(before, p) && !slices.Contains(left, p) {
			left = append(left, p)
		}
	}
	for _, p := range debMade {
		if _, err := r.fs.Lstat(rel(p)); !errors.Is(err, fs.ErrNotExist) && !slices.Contains(left, p) {
			left = append(left, p)
		}
	}
	if r.getent(t, "passwd", debUser) != nil {
		left = append(left, "user "+debUser)
	}
	if r.getent(t, "group", debUser) != nil {
		left = append(left, "group "+debUser)
	}
	if out, _ := r.output("dpkg-statoverride", "--list", debConfig); out != "" {
		left = append(left, "stat override of "+debConfig)
	}
	return left
}

// debHostUnchanged records what an install on this machine would change,
// its packages, users, groups and /usr/bin, and fails the test at its
// end, once the throwaway root is gone, if any of it differs.
func debHostUnchanged(t *testing.T) {
	t.Helper()
	before := debHostState(t)
	t.Cleanup(func() {
		after := debHostState(t)
		for _, what := range slices.Sorted(maps.Keys(before)) {
			if gone, added := lineDiff(before[what], after[what]); len(gone)+len(added) > 0 {
				t.Errorf("the test changed this machine's %s: gone %q, added %q", what, gone, added)
			}
		}
	})
}

// debHostState returns, by what they are, this machine's dpkg -l, its
// /etc/passwd and /etc/group, and the listing of /usr/bin.
func debHostState(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command("dpkg", "-l")
	cmd.Env = append(os.Environ(), "LC_ALL=C", "COLUMNS=300") // one width, before and after
	dpkg, err := cmd.Output()
	if err != nil {
		t.Fatalf("dpkg -l: %v", err)
	}
	state := map[string]string{"dpkg -l": string(dpkg)}
	for _, f := range []string{"/etc/passwd", "/etc/group"} {
		state[f] = string(debRead(t, f))
	}
	entries, err := os.ReadDir("/usr/bin")
	if err != nil {
		t.Fatal(err)
	}
	var listing strings.Builder
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			fmt.Fprintf(&listing, "%s %v %d %v\n", e.Name(), fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		}
	}
	state["/usr/bin"] = listing.String()
	return state
}

// lineDiff returns the lines of a that b lacks, and those of b that a
// lacks.
func lineDiff(a, b string) (gone, added []string) {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	for _, l := range as {
		if !slices.Contains(bs, l) {
			gone = append(gone, l)
		}
	}
	for _, l := range bs {
		if !slices.Contains(as, l) {
			added = append(added, l)
		}
	}
	return gone, added
}

// debBuild builds the package from the test's foyer binary with the
// Makefile's program, and checks its name: foyer_VERSION_ARCH.deb.
func debBuild(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "run", "./packaging", "--binary", bin, "--out", t.TempDir())
	cmd.Dir = ".."
	var stderr logtest.Buffer
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

// debCheckInstalled checks the package installed in the root: its status
// and conffile, each file's owner, mode and content, the foyer user; it
// returns the user's uid and gid.
func debCheckInstalled(t *testing.T, r *debRoot) (uid, gid int) {
	t.Helper()
	if st := debStatus(t, r); st != "install ok installed" {
		t.Fatalf("after dpkg -i: status %q", st)
	}
	// name:password:uid:gid:gecos:home:shell, and name:password:gid:members
	passwd := r.getent(t, "passwd", debUser)
	if len(passwd) != 7 {
		t.Fatalf("after dpkg -i: user %s is %q", debUser, passwd)
	}
	uid, _ = strconv.Atoi(passwd[2])
	gid, _ = strconv.Atoi(passwd[3])
	if g := r.getent(t, "group", debUser); len(g) != 4 || g[2] != passwd[3] {
		t.Fatalf("after dpkg -i: group %s is %q, want the user's own group %s", debUser, g, passwd[3])
	}
	// A system user (below Debian's first ordinary uid) that cannot log in.
	if uid >= 1000 || passwd[5] != debStateDir || passwd[6] != "/usr/sbin/nologin" {
		t.Errorf("foyer user %s: want a system uid, home %s, shell /usr/sbin/nologin", strings.Join(passwd, ":"), debStateDir)
	}

	for _, f := range []struct {
		path     string
		uid, gid int
		mode     fs.FileMode
	}{
		{debBinary, 0, 0, 0o755},
		{debRoomBin, 0, 0, 0o755},
		{debConfig, 0, gid, 0o640}, // the foyer group reads it; others do not
		{debUnit, 0, 0, 0o644},
		{debStateDir, uid, gid, fs.ModeDir | 0o750},
		{debToken, 0, gid, 0o640}, // made at install: root and the service read it
	} {
		fi, err := r.fs.Stat(rel(f.path))
		if err != nil {
			t.Errorf("after dpkg -i: %v", err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != f.uid || int(st.Gid) != f.gid || fi.Mode() != f.mode {
			t.Errorf("%s: owner %d:%d mode %v, want %d:%d %v", f.path, st.Uid, st.Gid, fi.Mode(), f.uid, f.gid, f.mode)
		}
	}

	for installed, built := range map[string]string{debBinary: bin, debRoomBin: filepath.Join(filepath.Dir(bin), supervisor.RoomProgram)} {
		if got, want := r.read(t, installed), debRead(t, built); !slices.Equal(got, want) {
			t.Errorf("%s is not the binary the package was built from", installed)
		}
	}
	if unit := r.read(t, debUnit); !regexp.MustCompile(`(?m)^ExecStart=` + debBinary + ` serve --config ` + debConfig + `$`).Match(unit) {
		t.Errorf("%s does not run %s serve --config %s:\n%s", debUnit, debBinary, debConfig, unit)
	}
	// The packaged config turns state_dir on where config.toml has the
	// key.
	conf := r.read(t, debConfig)
	if strings.Contains(string(debRead(t, "../config.toml")), "\nstate_dir = \"\"\n") &&
		!strings.Contains(string(conf), "\nstate_dir = \""+debStateDir+"\"\n") {
		t.Errorf("%s does not set state_dir = %q", debConfig, debStateDir)
	}

	// The admin token: random, long enough, and the packaged config's.
	if token := strings.TrimSpace(string(r.read(t, debToken))); len(token) != 43 {
		t.Errorf("%s holds %d characters, want a token of 43", debToken, len(token))
	}
	if !strings.Contains(string(conf), "\ntoken_file = \""+debToken+"\"\n") {
		t.Errorf("%s does not set token_file = %q", debConfig, debToken)
	}

	// dpkg knows the config as a conffile, unchanged since installed.
	conffiles := strings.Fields(r.run(t, "dpkg-query", "-W", "-f=${Conffiles}", "foyer"))
	if want := []string{debConfig, fmt.Sprintf("%x", md5.Sum(conf))}; !slices.Equal(conffiles, want) {
		t.Errorf("conffiles %q, want %q", conffiles, want)
	}
	return uid, gid
}

// debRead returns the content of this machine's file path.
func debRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// debServe runs the installed binary as the foyer user with the packaged
// config, unchanged, in the root and its network namespace: its default
// ports (UDP 7777, admin 9477 on loopback) collide with nothing there.
// The installed client commands list its rooms and create one.
func debServe(t *testing.T, r *debRoot, uid, gid int) {
	t.Helper()
	cmd := r.command(context.Background(), "setpriv", "--reuid="+debUser, "--regid="+debUser, "--init-groups",
		debBinary, "serve", "--ready-json", "--config", debConfig)
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
		return r.run(t, append([]string{debBinary}, args...)...)
	}
	// The admin listener asks for the token made at install: without it
	// the installed client is refused and says how to give it; with it,
	// answered.
	if out, err := r.try(debBinary, "rooms", "--admin", "127.0.0.1:9477"); err == nil || !strings.Contains(out, "--token-file") {
		t.Errorf("the packaged admin listener without its token: %v\n%s", err, out)
	}
	client("rooms", "--admin", "127.0.0.1:9477", "--token-file", debToken)

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
