// Package requiretest guards the tests that need more than Go: root, a
// command from a Debian package, network namespaces, cgroups, a raw
// socket. A plain `go test ./...` skips such a test with one line that
// says what it needs and that `make test` runs it. `make test` sets Env,
// and there a missing requirement fails the test instead: CI runs
// `make test`, so nothing passes there by being skipped.
//
// Every skip of the module goes through this package (a test in tests/
// checks it), so that Env turns every one of them into a failure.
package requiretest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Env is the variable `make test` sets: with it set to anything but "",
// a test whose requirement is missing fails rather than skips.
const Env = "FOYER_TEST_ALL"

// All reports whether Env is set: every test is to run.
func All() bool { return os.Getenv(Env) != "" }

// missing skips the test, or fails it under Env, for want of need.
func missing(t testing.TB, need string) {
	t.Helper()
	if All() {
		t.Fatalf("needs %s; %s is set (`make test`), so it may not be skipped", need, Env)
	} else {
		t.Skipf("needs %s; `make test` runs it", need)
	}
}

// Root requires the effective user to be root.
func Root(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "root")
	}
}

// debian names the Debian package of each command the tests run, for
// the reason a test gives without it; the Makefile's DEB_PACKAGES lists
// those that a Debian system may lack.
var debian = map[string]string{
	"DDNet-Server":    "ddnet-server",
	"adduser":         "adduser",
	"chromium":        "chromium",
	"chroot":          "coreutils",
	"clang":           "clang",
	"dpkg":            "dpkg",
	"dpkg-query":      "dpkg",
	"gcc":             "gcc",
	"getent":          "libc-bin",
	"godot3-server":   "godot3-server",
	"ip":              "iproute2",
	"mcs":             "mono-mcs",
	"mono":            "mono-runtime",
	"nats-server":     "nats-server",
	"nft":             "nftables",
	"node":            "nodejs",
	"nsenter":         "util-linux",
	"python3":         "python3",
	"quakestat":       "qstat",
	"setpriv":         "util-linux",
	"systemd-analyze": "systemd",
	"unshare":         "util-linux",
}

// Command returns the path of the executable name, looked up on PATH,
// or else the first of the absolute paths also that is one (Debian puts
// games in /usr/games, which is not on every PATH). It requires one.
func Command(t testing.TB, name string, also ...string) string {
	t.Helper()
	for _, p := range also {
		if !filepath.IsAbs(p) {
			t.Fatalf("requiretest.Command(%q): %q is not an absolute path", name, p)
		}
	}
	if p, err := exec.LookPath(name); err == nil && executable(p) == nil {
		return p
	}
	err := errors.New("not on PATH")
	for _, p := range also {
		if err = executable(p); err == nil {
			return p
		}
	}
	need := name
	if pkg, ok := debian[filepath.Base(name)]; ok {
		need += " (Debian package " + pkg + ")"
	}
	missing(t, need+": "+err.Error())
	return ""
}

// executable returns why the file at p cannot be run, or nil: a regular
// file with an execute bit (a binary hidden under /dev/null is not).
func executable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return errors.New(p + " is not an executable file")
	}
	return nil
}

// Netns requires network namespaces made with ip(8), as the LAN,
// cluster and package tests make them: root, the ip command, and a
// kernel that lets this process make one.
func Netns(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "root, for network namespaces")
	}
	ip := Command(t, "ip")
	if err := newNetns(ip); err != nil {
		missing(t, "network namespaces: "+err.Error())
	}
}

// RawSocket requires a raw IPv4 socket (root, or CAP_NET_RAW), through
// which tests send datagrams with forged sources.
func RawSocket(t testing.TB) {
	t.Helper()
	if err := rawSocket(); err != nil {
		missing(t, "a raw socket (root or CAP_NET_RAW): "+err.Error())
	}
}

// Cgroups requires write access to this process's cgroup in every
// hierarchy it is in: where a lobby, or a test, makes the cgroups of its
// rooms. Root has it; elsewhere a delegated cgroup gives it.
func Cgroups(t testing.TB) {
	t.Helper()
	if err := writableCgroups(); err != nil {
		missing(t, "cgroups it may write (root, or a delegated cgroup): "+err.Error())
	}
}

// ModuleCache requires that out, what a go command run offline
// (GOPROXY=off) said, is not that a module it needed is missing from the
// module cache. `go mod download`, which `make test` runs, fills the
// cache with Foyer's whole module graph; a build of Foyer alone fetches
// only the part it reads, and a module that requires Foyer resolves all
// of it.
func ModuleCache(t testing.TB, out []byte) {
	t.Helper()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "module lookup disabled by GOPROXY=off") {
			missing(t, "the module cache as `go mod download` fills it ("+strings.TrimSpace(l)+")")
			return
		}
	}
}
