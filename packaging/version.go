package main

import (
	"debug/elf"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// version is the package's Debian version and the time stamped on its
// files.
type version struct {
	version string
	time    time.Time
}

// gitVersion derives the version of the checkout in dir from
// `git describe --tags --always --dirty` and the commit's time. Outside a
// git checkout it is 0.0.0+DATE, today's.
func gitVersion(dir string) (version, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	describe, err := git("describe", "--tags", "--always", "--dirty")
	if err != nil {
		now := time.Now().UTC()
		return version{"0.0.0+" + now.Format("20060102"), now}, nil
	}
	head, err := git("show", "-s", "--format=%ct %h", "HEAD")
	if err != nil {
		return version{}, fmt.Errorf("git show HEAD: %w", err)
	}
	ct, hash, _ := strings.Cut(head, " ")
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil || hash == "" {
		return version{}, fmt.Errorf("git show HEAD: %q is not a commit time and hash", head)
	}
	commit := time.Unix(sec, 0).UTC()
	v := debVersion(describe, hash, commit)
	if !debianVersion.MatchString(v) {
		return version{}, fmt.Errorf("git describe %q: version %q is not a Debian version", describe, v)
	}
	return version{v, commit}, nil
}

// debianVersion is what a Debian upstream version without an epoch or a
// revision may be (deb-version(7)): a digit first, then alphanumerics and
// . + ~.
var debianVersion = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~]*$`)

// describeDistance is `git describe` past a tag: TAG-N-gSHA.
var describeDistance = regexp.MustCompile(`^(.+)-([0-9]+)-g([0-9a-f]+)$`)

// describeHash is `git describe --always` with no tag to describe from:
// the commit's abbreviated hash, at least 7 digits.
var describeHash = regexp.MustCompile(`^[0-9a-f]{7,}$`)

// debVersion turns `git describe --tags --always --dirty` into a Debian
// version that sorts as the commits do:
//
//	v1.2.0                  1.2.0
//	v1.2.0-3-gabc1234       1.2.0+3.gabc1234  (after 1.2.0, before 1.2.1)
//	v1.3.0-rc1              1.3.0~rc1         (before 1.3.0)
//	v1.2.0-dirty            1.2.0+0.dirty
//	abc1234 (no tag)        0.0.0+COMMITTIME.abc1234
//
// A tag that is no version (it does not start with a digit once a "v" is
// cut) counts as no tag. hash is the commit's abbreviated hash and
// COMMITTIME its time, YYYYMMDDhhmmss in UTC, so untagged builds sort by
// commit.
func debVersion(describe, hash string, commit time.Time) string {
	d, dirty := strings.CutSuffix(describe, "-dirty")
	tag, distance := d, ""
	if m := describeDistance.FindStringSubmatch(d); m != nil {
		tag, distance = m[1], m[2]
	} else if describeHash.MatchString(d) {
		tag = ""
	}
	upstream := strings.ReplaceAll(strings.TrimPrefix(tag, "v"), "-", "~")
	var extra []string
	if !debianVersion.MatchString(upstream) {
		upstream = "0.0.0"
		extra = append(extra, commit.Format("20060102150405"), hash)
	} else if distance != "" {
		extra = append(extra, distance, "g"+hash)
	} else if dirty {
		// Zero commits past the tag: before the next commit's version.
		extra = append(extra, "0")
	}
	if dirty {
		extra = append(extra, "dirty")
	}
	if len(extra) == 0 {
		return upstream
	}
	sep := "+"
	if strings.Contains(upstream, "+") {
		sep = "."
	}
	return upstream + sep + strings.Join(extra, ".")
}

// debArch is the Debian architecture of binary, which must be static: the
// package depends on no C library.
func debArch(binary string) (string, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%s is dynamically linked: build it with CGO_ENABLED=0 (make build)", binary)
		}
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	}
	return "", fmt.Errorf("%s: no Debian architecture known for machine %v", binary, f.Machine)
}
