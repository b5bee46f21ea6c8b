package buildinfo

import (
	"runtime/debug"
	"testing"
)

// TestFromBuild: a module version wins; a build from a clone says its
// commit, and whether it had changes; a build that recorded nothing is
// "devel".
func TestFromBuild(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}
	dirty := append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	for _, tc := range []struct {
		module   string
		settings []debug.BuildSetting
		want     string
	}{
		{"v1.2.3", rev, "v1.2.3"},
		{"(devel)", rev, "devel-0123456789ab"},
		{"(devel)", dirty, "devel-0123456789ab+dirty"},
		{"", nil, "devel"},
	} {
		if got := fromBuild(tc.module, tc.settings); got != tc.want {
			t.Errorf("fromBuild(%q, %v) = %q, want %q", tc.module, tc.settings, got, tc.want)
		}
	}
	if Version() == "" || String() == "" {
		t.Error("no version")
	}
}
