package roomuser

import (
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	for in, want := range map[string]Range{
		"":                      {},
		"1879048192-1879113727": {DefaultFirst, DefaultLast},
		"70000":                 {70000, 70000},
		" 70000 - 70009 ":       {70000, 70009},
	} {
		if got, err := ParseRange(in); err != nil || got != want {
			t.Errorf("ParseRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"0-100":                 "root",
		"100-50":                "above last",
		"x":                     "not a range",
		"2147483000-2147483647": "not portable",
	} {
		if _, err := ParseRange(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseRange(%q) = %v, want an error with %q", in, err, why)
		}
	}
	if n := (Range{DefaultFirst, DefaultLast}).Len(); n != 65536 {
		t.Errorf("the default range has %d ids", n)
	}
}

func TestClashes(t *testing.T) {
	r := Range{60000, 60999}
	passwd := []byte("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
	if err := r.Clashes(passwd, nil); err != nil {
		t.Errorf("no clash: %v", err)
	}
	passwd = append(passwd, "game:x:60500:100::/home/game:/bin/sh\n"...)
	if err := r.Clashes(passwd, nil); err == nil || !strings.Contains(err.Error(), "user game has id 60500") {
		t.Errorf("a user in the range: %v", err)
	}
	if err := r.Clashes(nil, []byte("players:x:60001:\n")); err == nil || !strings.Contains(err.Error(), "group players has id 60001") {
		t.Errorf("a group in the range: %v", err)
	}
}
