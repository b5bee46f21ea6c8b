// Package buildinfo says which Foyer a binary is: the version `foyer
// --version`, the admin listener's /healthz and the --ready-json line
// report.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// version, when set at link time (go build -ldflags "-X
// github.com/foyerlobby/foyer/internal/buildinfo.version=v1.2.3"), is
// the version; otherwise it is read from the build.
var version string

// Version is this binary's version: the one set at link time; else the
// module's version (a build by `go install ...@v1.2.3`, or in a clone,
// from its tags); else "devel" and the commit it was built from, with
// "+dirty" for uncommitted changes; else "devel".
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuild(bi.Main.Version, bi.Settings)
}

// fromBuild is Version from what the build recorded: the main module's
// version and the build settings.
func fromBuild(module string, settings []debug.BuildSetting) string {
	if module != "" && module != "(devel)" {
		return module
	}
	var rev, dirty string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel-" + rev[:min(len(rev), 12)] + dirty
}

// String is the version with the Go release and platform, for a person:
// "v1.2.3 (go1.26.0 linux/amd64)".
func String() string {
	bi, ok := debug.ReadBuildInfo()
	goVersion := "go?"
	if ok {
		goVersion = bi.GoVersion
	}
	var arch, goos string
	if ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "GOARCH":
				arch = s.Value
			case "GOOS":
				goos = s.Value
			}
		}
	}
	return strings.TrimSpace(Version() + " (" + goVersion + " " + goos + "/" + arch + ")")
}
