package gg2

import (
	"errors"
	"testing"

	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

func TestUUIDText(t *testing.T) {
	for _, tc := range []struct {
		u    UUID
		text string
		hex  string
	}{
		{RegisterUUID, "b5dae2e8-424f-9ed0-0fcb-8c21c7ca1352", hexRegisterUUID},
		{UnregisterUUID, "488984ac-45dc-86e1-9901-98dd1c01c064", hexUnregisterUUID},
		{ListProtocolUUID, "297d0df4-430c-bf61-640a-640897eaef57", hexListUUID},
		{GG2LobbyUUID, "1ccf16b1-436d-856f-504d-cc1af306aaa7", hexGG2Lobby},
	} {
		if got := tc.u.String(); got != tc.text {
			t.Errorf("String() = %q, want %q", got, tc.text)
		}
		if want := wiretest.Hex(t, tc.hex); string(tc.u[:]) != string(want) {
			t.Errorf("%s: wire bytes % x, want % x", tc.text, tc.u[:], want)
		}
		upper, err := ParseUUID("B5DAE2E8-424F-9ED0-0FCB-8C21C7CA1352")
		if err != nil || upper != RegisterUUID {
			t.Errorf("upper case: %v, %v", upper, err)
		}
	}
}

func TestParseUUIDErrors(t *testing.T) {
	for _, s := range []string{
		"",
		"b5dae2e8424f9ed00fcb8c21c7ca1352",
		"b5dae2e8-424f-9ed0-0fcb-8c21c7ca135",
		"b5dae2e8-424f-9ed0-0fcb-8c21c7ca13522",
		"b5dae2e8_424f-9ed0-0fcb-8c21c7ca1352",
		"g5dae2e8-424f-9ed0-0fcb-8c21c7ca1352",
	} {
		if _, err := ParseUUID(s); !errors.Is(err, errUUIDSyntax) {
			t.Errorf("ParseUUID(%q) = %v, want syntax error", s, err)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		want Kind
	}{
		{hexRegisterUUID, KindRegistration},
		{hexRegisterUUID + "00", KindRegistration},
		{hexUnregisterUUID + hexServerID, KindUnregister},
		{hexListUUID + hexGG2Lobby, KindUnknown},
		{"b5dae2e8 424f 9ed0 0fcb 8c21c7ca13", KindUnknown},
		{"", KindUnknown},
	} {
		if got := Classify(wiretest.Hex(t, tc.hex)); got != tc.want {
			t.Errorf("Classify(%s) = %v, want %v", tc.hex, got, tc.want)
		}
	}
}
