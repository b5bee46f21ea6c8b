package tmptest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestOwnNamesWhatIsLeftAndRemovesIt(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	left, err := Own()
	if err != nil {
		t.Fatal(err)
	}
	dir := os.TempDir()
	if fi, err := os.Stat(dir); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Fatalf("the test's temporary directory %s: %v, %v", dir, fi.Mode(), err)
	}
	if err := os.WriteFile(filepath.Join(dir, "leak"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "gone"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "gone"))
	if got := left(); !slices.Equal(got, []string{"temporary leak"}) {
		t.Fatalf("left() = %q, want the one file left", got)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the test's temporary directory is still there: %v", err)
	}
}
