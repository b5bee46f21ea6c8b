package tests

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/foyerlobby/foyer"

// goList runs go list in the module's root.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// The edges know the room table, not the process manager: no package under
// lobby/ (the client included) links gRPC or go-plugin, whatever it
// imports, so a supervisor on another host or a table of adopted rooms can
// stand behind the same interface.
func TestEdgesDoNotLinkTheProcessManager(t *testing.T) {
	for _, pkg := range goList(t, module+"/lobby/...", module+"/room") {
		for _, dep := range goList(t, "-deps", pkg) {
			if dep == "google.golang.org/grpc" || dep == "github.com/hashicorp/go-plugin" {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

// Helpers under internal/ are leaves: they import nothing of Foyer but
// one another.
func TestInternalHelpersAreLeaves(t *testing.T) {
	for _, pkg := range goList(t, module+"/internal/...") {
		for _, imp := range goList(t, "-f", `{{join .Imports " "}}`, pkg) {
			if strings.HasPrefix(imp, module+"/") && !strings.HasPrefix(imp, module+"/internal/") {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}

// readmeLayout returns the paths of the README's layout table.
func readmeLayout(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(readme, []byte("\n## Layout\n"))
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	code := regexp.MustCompile("`([^`]+)`")
	var paths []string
	sc := bufio.NewScanner(bytes.NewReader(rest))
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "## ") {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 3 || !strings.HasPrefix(sc.Text(), "| `") {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			paths = append(paths, strings.TrimSuffix(m[1], "/"))
		}
	}
	return paths
}

// The README's layout table names every package of the tree, and nothing
// that is not there: helpers under an internal/ directory are covered by
// that directory's row.
func TestReadmeLayoutMatchesTheTree(t *testing.T) {
	rows := readmeLayout(t)
	if len(rows) == 0 {
		t.Fatal("the layout table has no rows")
	}
	for _, p := range rows {
		if _, err := os.Stat(path.Join("..", p)); err != nil {
			t.Errorf("the layout table names %s, which does not exist", p)
		}
	}
	for _, pkg := range goList(t, "./...") {
		dir := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		covered := slices.Contains(rows, dir)
		for d := dir; !covered && d != "." && d != ""; d = path.Dir(d) {
			covered = path.Base(d) == "internal" && slices.Contains(rows, d)
		}
		if !covered {
			t.Errorf("package %s is not in the README's layout table", dir)
		}
	}
}

// The client library, the client commands and the test harness build
// wherever a game developer works, not only where rooms run.
func TestClientSideBuildsForDarwinAndWindows(t *testing.T) {
	for _, goos := range []string{"darwin", "windows"} {
		cmd := exec.Command("go", "build", "./lobby/client", "./cmd/foyer", "./foyertest")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s go build: %v\n%s", goos, err, out)
		}
	}
}

// Every skip goes through internal/requiretest, which fails the test
// instead under `make test`: a test that skipped by itself would pass CI
// without having run.
func TestSkipsGoThroughRequiretest(t *testing.T) {
	skips := []string{"Skip", "Skipf", "SkipNow"}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || p == "../internal/requiretest"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, ".go"):
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && slices.Contains(skips, sel.Sel.Name) {
				t.Errorf("%s: %s skips by itself; internal/requiretest says why, and fails under make test", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
