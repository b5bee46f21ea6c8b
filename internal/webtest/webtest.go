// Package webtest holds the HTTP client piece that the tests of several
// packages share: a request whose failure fails the test, answered with
// its whole body. What a test asks and how it reads the page stay with the
// test.
package webtest

import (
	"io"
	"net/http"
	"testing"
)

// Fetch sends a bodiless method request for url with c (nil:
// http.DefaultClient) and returns the response and its whole body, the
// response's body closed; any failure fails t.
func Fetch(t testing.TB, c *http.Client, method, url string) (*http.Response, string) {
	t.Helper()
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
