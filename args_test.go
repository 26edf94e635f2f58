package leasehold

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidateNames(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"payments.charge", true},
		{"a", true},
		{"9", true},
		{"billing/eu-west:v2_retry", true},
		{strings.Repeat("k", 128), true},
		{"", false},
		{strings.Repeat("k", 129), false},
		{"_leading", false},
		{".leading", false},
		{"-leading", false},
		{"has space", false},
		{"tab\there", false},
		{"semi;colon", false},
		{"quote'", false},
		{"ünicode", false},
		{"nul\x00", false},
	}
	for _, tc := range cases {
		kindErr, queueErr := ValidateKind(tc.name), ValidateQueue(tc.name)
		if tc.ok && (kindErr != nil || queueErr != nil) {
			t.Errorf("%q: want valid, got %v / %v", tc.name, kindErr, queueErr)
		}
		if !tc.ok && (!errors.Is(kindErr, ErrInvalidKind) || !errors.Is(queueErr, ErrInvalidQueue)) {
			t.Errorf("%q: want ErrInvalidKind / ErrInvalidQueue, got %v / %v", tc.name, kindErr, queueErr)
		}
	}
}

func TestErrorText(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"provider timeout", "provider timeout"},
		{"nul \x00 here", "nul \uFFFD here"},
		{"bad \xff\xfe utf-8", "bad \uFFFD utf-8"},
		{"", ""},
	}
	for _, tc := range cases {
		if got := errorText(errors.New(tc.in)); got != tc.want {
			t.Errorf("errorText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := "a" + strings.Repeat("é", MaxErrorText) // the cut falls inside an é
	got := errorText(errors.New(long))
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "… (truncated)") || len(got) > MaxErrorText+len("… (truncated)") {
		t.Errorf("errorText of %d bytes: %d bytes, valid %v, suffix %q", len(long), len(got), utf8.ValidString(got), got[len(got)-20:])
	}
}
