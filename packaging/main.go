// Command packaging builds Foyer's Debian package, foyer_VERSION_ARCH.deb,
// with nfpm as a library: the binaries in /usr/bin (foyer, and the
// rooms' foyer-room, which make build leaves beside it), config.toml as the
// conffile /etc/foyer/config.toml (state kept in /var/lib/foyer), the
// systemd unit of docs/foyer.service, and the maintainer scripts that
// create the foyer user. `make deb` runs it from the repository's root:
//
//	go run ./packaging --binary bin/foyer --out bin
//
// It prints the package's path on stdout.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"

	"github.com/foyerlobby/foyer/supervisor"
)

// The repository files the package is made of, relative to its root.
const (
	nfpmConfig = "packaging/nfpm.yaml"
	configToml = "config.toml"
	unitFile   = "docs/foyer.service"
)

func main() {
	binary := flag.String("binary", "bin/foyer", "the foyer `binary` to package (static, as `make build` makes it, foyer-room beside it)")
	out := flag.String("out", "bin", "the `directory` to write the .deb in")
	flag.Parse()
	path, err := build(*binary, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "packaging:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

// build writes the package into out and returns its path.
func build(binary, out string) (string, error) {
	arch, err := debArch(binary)
	if err != nil {
		return "", err
	}
	v, err := gitVersion(".")
	if err != nil {
		return "", err
	}
	stage, err := os.MkdirTemp("", "foyer-deb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)
	if err := stageFiles(stage); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(binary)
	if err != nil {
		return "", err
	}
	room := filepath.Join(filepath.Dir(abs), supervisor.RoomProgram)
	switch roomArch, err := debArch(room); {
	case err != nil:
		return "", fmt.Errorf("the rooms' program: %w (make build builds it beside %s)", err, binary)
	case roomArch != arch:
		return "", fmt.Errorf("%s is for %s, %s for %s", room, roomArch, binary, arch)
	}
	vars := map[string]string{"ARCH": arch, "VERSION": v.version, "BINARY": abs, "ROOM_BINARY": room, "STAGE": stage}
	cfg, err := nfpm.ParseFileWithEnvMapping(nfpmConfig, func(k string) string { return vars[k] })
	if err != nil {
		return "", fmt.Errorf("%s: %w", nfpmConfig, err)
	}
	info, err := cfg.Get("deb")
	if err != nil {
		return "", fmt.Errorf("%s: %w", nfpmConfig, err)
	}
	// Every timestamp in the package is the commit's: the same commit
	// makes the same bytes.
	info.MTime = v.time
	path := filepath.Join(out, deb.Default.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	err = deb.Default.Package(info, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// stageFiles writes the packaged config.toml and foyer.service into dir.
func stageFiles(dir string) error {
	conf, err := os.ReadFile(configToml)
	if err != nil {
		return err
	}
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		return err
	}
	if unit, err = packagedUnit(unit); err != nil {
		return fmt.Errorf("%s: %w", unitFile, err)
	}
	return errors.Join(
		os.WriteFile(filepath.Join(dir, "config.toml"), packagedConfig(conf), 0o644),
		os.WriteFile(filepath.Join(dir, "foyer.service"), unit, 0o644))
}
