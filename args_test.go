package leasehold

import (
	"errors"
	"strings"
	"testing"
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
