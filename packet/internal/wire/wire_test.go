package wire

import (
	"errors"
	"testing"
)

type codecA struct{}

func (codecA) Name() string { return "a" }

type codecB struct{}

func (codecB) Name() string { return "b" }

var errSentinel = errors.New("bad thing")

func TestParseError(t *testing.T) {
	err := Fail[codecA]("request", 7, errSentinel)
	if got, want := err.Error(), "a: request: bad thing (at offset 7)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, errSentinel) {
		t.Fatalf("%v does not unwrap to its sentinel", err)
	}
	var pa *ParseError[codecA]
	if !errors.As(err, &pa) || pa.Msg != "request" || pa.Off != 7 {
		t.Fatalf("errors.As = %+v", pa)
	}
	// Each codec's errors are a type of their own.
	var pb *ParseError[codecB]
	if errors.As(err, &pb) {
		t.Fatalf("codec b's ParseError matched %v", err)
	}
}
