package tests

import (
	"bytes"
	"os"
	"testing"
)

// The README shows config.toml and the harness example test verbatim; these
// tests keep them from drifting apart.

func TestReadmeShowsConfigToml(t *testing.T) {
	readmeShows(t, "config.toml", "../config.toml")
}

func TestReadmeShowsHarnessExample(t *testing.T) {
	readmeShows(t, "harness example: foyertest/example_test.go", "../foyertest/example_test.go")
}

// readmeShows checks that the fenced block between `<!-- name -->` and
// `<!-- end name -->` in README.md is exactly the file at path.
func readmeShows(t *testing.T, name, path string) {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	open, end := []byte("<!-- "+name+" -->\n"), []byte("<!-- end "+name+" -->")
	_, rest, ok := bytes.Cut(readme, open)
	if !ok {
		t.Fatalf("README.md has no %q marker", open)
	}
	block, _, ok := bytes.Cut(rest, end)
	if !ok {
		t.Fatalf("README.md has no %q marker", end)
	}
	// The block is a fence: an opening line with the language, the file,
	// and the closing fence.
	_, body, ok := bytes.Cut(block, []byte("\n"))
	if !ok || !bytes.HasPrefix(block, []byte("```")) || !bytes.HasSuffix(body, []byte("```\n")) {
		t.Fatalf("README.md block %q is not one fenced code block", name)
	}
	body = bytes.TrimSuffix(body, []byte("```\n"))
	if !bytes.Equal(body, want) {
		t.Errorf("README.md block %q differs from %s; copy the file into the README", name, path)
	}
}
