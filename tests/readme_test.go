package tests

import (
	"bytes"
	"os"
	"testing"
)

// The README shows the harness example test verbatim, and
// docs/configuration.md shows config.toml verbatim; these tests keep them
// from drifting apart.

func TestConfigurationDocShowsConfigToml(t *testing.T) {
	docShows(t, "../docs/configuration.md", "config.toml", "../config.toml")
}

func TestReadmeShowsHarnessExample(t *testing.T) {
	docShows(t, "../README.md", "harness example: foyertest/example_test.go", "../foyertest/example_test.go")
}

// readmeMaxLines bounds the README: it is what a newcomer reads first, and
// the long parts belong in docs/.
const readmeMaxLines = 350

func TestReadmeIsShort(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n >= readmeMaxLines {
		t.Errorf("README.md has %d lines, want fewer than %d: move the details to docs/", n, readmeMaxLines)
	}
}

// docShows checks that the fenced block between `<!-- name -->` and
// `<!-- end name -->` in the document doc is exactly the file at path.
func docShows(t *testing.T, doc, name, path string) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if body := docBlock(t, doc, name); !bytes.Equal(body, want) {
		t.Errorf("%s: block %q differs from %s; copy the file into it", doc, name, path)
	}
}

// docBlock returns the text of the fenced block between `<!-- name -->`
// and `<!-- end name -->` in the document doc.
func docBlock(t *testing.T, doc, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	open, end := []byte("<!-- "+name+" -->\n"), []byte("<!-- end "+name+" -->")
	_, rest, ok := bytes.Cut(text, open)
	if !ok {
		t.Fatalf("%s has no %q marker", doc, open)
	}
	block, _, ok := bytes.Cut(rest, end)
	if !ok {
		t.Fatalf("%s has no %q marker", doc, end)
	}
	// The block is a fence: an opening line with the language, the file,
	// and the closing fence.
	_, body, ok := bytes.Cut(block, []byte("\n"))
	if !ok || !bytes.HasPrefix(block, []byte("```")) || !bytes.HasSuffix(body, []byte("```\n")) {
		t.Fatalf("%s: block %q is not one fenced code block", doc, name)
	}
	return bytes.TrimSuffix(body, []byte("```\n"))
}
