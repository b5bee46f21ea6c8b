package main

import (
	"os/exec"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/requiretest"
)

func TestDebVersion(t *testing.T) {
	commit := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, c := range []struct{ describe, want string }{
		{"v1.2.0", "1.2.0"},
		{"1.2.0", "1.2.0"},
		{"v1.2.0-3-gabc1234", "1.2.0+3.gabc1234"},
		{"v1.2.0-3-gabc1234-dirty", "1.2.0+3.gabc1234.dirty"},
		{"v1.2.0-dirty", "1.2.0+0.dirty"},
		{"v1.3.0-rc1", "1.3.0~rc1"},
		{"v1.3.0-rc.1-2-gabc1234", "1.3.0~rc.1+2.gabc1234"},
		{"v1.2.0+meta-3-gabc1234", "1.2.0+meta.3.gabc1234"},
		{"abc1234", "0.0.0+20260304050607.abc1234"},
		{"1234abc", "0.0.0+20260304050607.abc1234"}, // a hash, not a version
		{"abc1234-dirty", "0.0.0+20260304050607.abc1234.dirty"},
		{"release", "0.0.0+20260304050607.abc1234"},
		{"release_2-3-gabc1234", "0.0.0+20260304050607.abc1234"},
	} {
		got := debVersion(c.describe, "abc1234", commit)
		if got != c.want {
			t.Errorf("debVersion(%q) = %q, want %q", c.describe, got, c.want)
		}
		if !debianVersion.MatchString(got) {
			t.Errorf("debVersion(%q) = %q: not a Debian version", c.describe, got)
		}
	}
}

// The versions sort as their commits do, by dpkg's own comparison.
func TestDebVersionOrder(t *testing.T) {
	requiretest.Command(t, "dpkg")
	day := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	ordered := []string{
		debVersion("fff0000", "fff0000", day),
		debVersion("0000fff", "0000fff", day.Add(time.Second)),
		debVersion("v0.1.0-rc1", "abc1234", day),
		debVersion("v0.1.0", "abc1234", day),
		debVersion("v0.1.0-dirty", "abc1234", day),
		debVersion("v0.1.0-2-gabc1234", "abc1234", day),
		debVersion("v0.1.0-10-gabc1234", "abc1234", day),
		debVersion("v0.1.1", "abc1234", day),
	}
	for i := 1; i < len(ordered); i++ {
		a, b := ordered[i-1], ordered[i]
		if err := exec.Command("dpkg", "--compare-versions", a, "lt", b).Run(); err != nil {
			t.Errorf("dpkg --compare-versions %s lt %s: %v", a, b, err)
		}
	}
}
