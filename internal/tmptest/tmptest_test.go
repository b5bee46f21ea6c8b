package tmptest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOwnNamesWhatIsLeftAndRemovesIt(t *testing.T) {
	var report strings.Builder
	stderr = &report
	t.Cleanup(func() { stderr = os.Stderr })
	for _, leak := range []bool{false, true} {
		t.Setenv("TMPDIR", t.TempDir())
		done := Own()
		dir := os.TempDir()
		if fi, err := os.Stat(dir); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
			t.Fatalf("the test's temporary directory %s: %v, %v", dir, fi.Mode(), err)
		}
		if leak {
			if err := os.WriteFile(filepath.Join(dir, "leak"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(dir, "gone"), 0o700); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "gone"))
		report.Reset()
		switch code := done(0); {
		case leak && (code != 1 || !strings.Contains(report.String(), ": leak\n")):
			t.Errorf("with a file left: code %d, report %q; want 1, naming the file", code, report.String())
		case !leak && (code != 0 || report.Len() != 0):
			t.Errorf("with nothing left: code %d, report %q; want 0, nothing", code, report.String())
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("the test's temporary directory is still there: %v", err)
		}
	}
}
