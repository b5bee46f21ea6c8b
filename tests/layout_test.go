package tests

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
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

// goList runs go list in the module's root and returns the fields of
// its output.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	return strings.Fields(goListOutput(t, args...))
}

// goListLines runs go list in the module's root and returns its lines.
func goListLines(t *testing.T, args ...string) []string {
	t.Helper()
	return strings.Split(strings.TrimSpace(goListOutput(t, args...)), "\n")
}

func goListOutput(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return string(out)
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

// The game SDK stands without the host: no package under instance/ links
// a package under supervisor/, its tests included, so that a game built
// on the SDK carries no process manager and the SDK is tested on its own.
// Tests that need the host to launch a room live with the host.
func TestSDKDoesNotLinkTheHost(t *testing.T) {
	for _, pkg := range goList(t, module+"/instance/...") {
		// -test adds the deps of the package's tests, in package and
		// external, to those of the package itself.
		for _, dep := range goList(t, "-deps", "-test", pkg) {
			if dep == module+"/supervisor" || strings.HasPrefix(dep, module+"/supervisor/") {
				t.Errorf("%s (or its tests) depends on %s", pkg, dep)
			}
		}
	}
}

// No two packages of the module share a name, commands aside: a name
// says which package it is wherever it is read, and no import needs an
// alias to tell two of Foyer's apart.
func TestPackageNamesAreUnique(t *testing.T) {
	fields := goList(t, "-f", "{{.ImportPath}} {{.Name}}", "./...")
	seen := map[string]string{}
	for i := 0; i+1 < len(fields); i += 2 {
		pkg, name := fields[i], fields[i+1]
		if other, ok := seen[name]; ok && name != "main" {
			t.Errorf("%s and %s are both package %s", other, pkg, name)
		}
		seen[name] = pkg
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

// The client library, the client commands, the test harness and the
// room SDK (with its reference room) build wherever a game developer
// works, not only where rooms run.
func TestClientSideAndRoomSDKBuildForDarwinAndWindows(t *testing.T) {
	for _, goos := range []string{"darwin", "windows"} {
		cmd := exec.Command("go", "build", "./lobby/client", "./cmd/foyer", "./foyertest", "./instance", "./instance/refroom")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s go build: %v\n%s", goos, err, out)
		}
	}
}

// Every package with a Config keeps its defaults one way: a function
// DefaultConfig() Config that callers start from, never a variable that
// could be changed under everyone, nor another name.
func TestOneConventionForDefaults(t *testing.T) {
	for _, dir := range goList(t, "-f", "{{.Dir}}", "./...") {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			for name, f := range pkg.Files {
				for _, d := range f.Decls {
					checkDefaultDecl(t, name, d)
				}
			}
		}
	}
}

// checkDefaultDecl fails t for a declaration in file that holds defaults
// other than as func DefaultConfig() Config.
func checkDefaultDecl(t *testing.T, file string, d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil || !strings.HasPrefix(d.Name.Name, "Default") {
			return
		}
		res := d.Type.Results
		returnsConfig := res != nil && len(res.List) == 1 && types.ExprString(res.List[0].Type) == "Config"
		if d.Name.Name != "DefaultConfig" || d.Type.Params.NumFields() != 0 || !returnsConfig {
			t.Errorf("%s: func %s: defaults are func DefaultConfig() Config", file, d.Name.Name)
		}
	case *ast.GenDecl:
		if d.Tok != token.VAR {
			return
		}
		for _, s := range d.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if strings.HasPrefix(n.Name, "Default") {
					t.Errorf("%s: var %s: defaults are func DefaultConfig() Config, not a variable", file, n.Name)
				}
			}
		}
	}
}

// Test-only packages are recognisable by their name, ending in "test":
// no package that ships imports one, and every package that only tests
// import is named so.
func TestTestOnlyPackagesAreNamedSo(t *testing.T) {
	shipped := map[string]bool{} // imported by the non-test code of a package
	byTests := map[string]bool{} // imported by a test file
	for _, line := range goListLines(t, "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...") {
		parts := strings.SplitN(line, "|", 3)
		for _, imp := range strings.Fields(parts[1]) {
			shipped[imp] = shipped[imp] || !isTestOnly(parts[0])
		}
		for _, imp := range strings.Fields(parts[2]) {
			byTests[imp] = true
		}
	}
	for _, line := range goListLines(t, "-f", `{{.ImportPath}} {{.Name}}`, "./...") {
		path, name, _ := strings.Cut(line, " ")
		switch {
		case isTestOnly(path) && shipped[path]:
			t.Errorf("%s is named as a test helper but code that ships imports it", path)
		case name != "main" && !isTestOnly(path) && byTests[path] && !shipped[path] && !strings.HasPrefix(path, module+"/tests"):
			t.Errorf("%s is imported by tests only: name it ...test", path)
		}
	}
}

// isTestOnly reports whether the package at import path is a test helper.
// isTestOnly reports whether path is a test helper: a package whose name
// ends in "test", or a package inside one (a tool only its tests run).
func isTestOnly(path string) bool {
	for elem := range strings.SplitSeq(path, "/") {
		if strings.HasSuffix(elem, "test") {
			return true
		}
	}
	return false
}

// Every skip goes through internal/requiretest, which fails the test
// instead under `make test`: a test that skipped by itself would pass CI
// without having run. The dependencies' code, vendored (go mod vendor),
// is theirs.
func TestSkipsGoThroughRequiretest(t *testing.T) {
	skips := []string{"Skip", "Skipf", "SkipNow"}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || p == "../internal/requiretest" || p == "../vendor"):
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
