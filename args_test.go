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
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "… (truncated)") || len(got) > MaxErrorText || len(got) < MaxErrorText-3 {
		t.Errorf("errorText of %d bytes: %d bytes, valid %v, suffix %q", len(long), len(got), utf8.ValidString(got), got[len(got)-20:])
	}
}

func TestValidateNameErrors(t *testing.T) {
	cases := []struct {
		name, want string
	}{
		{"", `kind: empty (want 1-128`},
		{"has space", `kind: "has space": ' ' at byte 3 (want`},
		{"_x", `kind: "_x": '_' at byte 0`},
		{"nul\x00", `kind: "nul\x00": NUL character at byte 3`},
		{"bad\xff", `kind: "bad\xff": invalid UTF-8 at byte 3`},
		{"ünicode", `kind: "ünicode": 'ü' at byte 0`},
		{strings.Repeat("k", 10240), `kind: "` + strings.Repeat("k", 64) + `"… (10240 bytes) is longer than 128 bytes`},
	}
	for _, tc := range cases {
		err := ValidateKind(tc.name)
		var bad *InvalidInputError
		if !errors.As(err, &bad) || bad.Field != "kind" || bad.Index != -1 || !errors.Is(err, ErrInvalidKind) {
			t.Errorf("ValidateKind(%.20q) = %#v, want an *InvalidInputError for kind matching ErrInvalidKind", tc.name, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "leasehold: invalid job kind: "+tc.want) || len(msg) > 300 {
			t.Errorf("ValidateKind(%.20q) = %q, want it to start with %q and be short", tc.name, msg, tc.want)
		}
	}
	var bad *InvalidInputError
	if err := ValidateQueue("a\x00"); !errors.As(err, &bad) || bad.Field != "queue" || !errors.Is(err, ErrInvalidQueue) {
		t.Errorf("ValidateQueue with NUL = %v", err)
	}
}

func TestQuoteInput(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes, the cut at 64 falls on a rune start
	odd := "a" + long                // the cut at 64 falls inside an é
	cases := []struct {
		in, want string
	}{
		{"charge", `"charge"`},
		{"", `""`},
		{"nul\x00\xff", `"nul\x00\xff"`},
		{strings.Repeat("k", 64), `"` + strings.Repeat("k", 64) + `"`},
		{strings.Repeat("k", 10240), `"` + strings.Repeat("k", 64) + `"… (10240 bytes)`},
		{long, `"` + strings.Repeat("é", 32) + `"… (200 bytes)`},
		{odd, `"a` + strings.Repeat("é", 31) + `"… (201 bytes)`},
	}
	for _, tc := range cases {
		got := quoteInput(tc.in)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("quoteInput(%.20q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJSONProblem(t *testing.T) {
	cases := []struct {
		in, want string // want "" for storable
	}{
		{`{}`, ""},
		{`{"a":"plain","b":[1,-2.5,3e10,true,false,null],"c":{"d":"é✓"}}`, ""},
		{`{"a":"\\u0000"}`, ""},          // an escaped backslash, then text
		{`{"a":"\\\u0041"}`, ""},         // an escaped backslash, then \u0041
		{`{"a":"\ud83d\ude00"}`, ""},     // a surrogate pair
		{`{"a":"\u0001\u001f\t\n"}`, ""}, // control characters, escaped
		{`{"a":1e131071,"b":9.9e131071,"c":1e-16383,"d":0.0e-16382,"e":0e200000,"f":0.001e131074}`, ""},
		{`{"a":"x\u0000"}`, `\u0000 (NUL) in a string at byte 7`},
		{`{"\u0000":1}`, `\u0000 (NUL) in a string at byte 2`},
		{`{"a":"\\\u0000"}`, `\u0000 (NUL) in a string at byte 8`},
		{"{\"a\":\"\xff\"}", "invalid UTF-8 in a string at byte 6"},
		{"{\"\xc3\":1}", "invalid UTF-8 in a string at byte 2"},
		{"{\"a\":\"\xed\xa0\x80\"}", "invalid UTF-8 in a string at byte 6"}, // a UTF-8-encoded surrogate
		{`{"a":"\ud800"}`, `unpaired surrogate \ud800 in a string at byte 6`},
		{`{"a":"\ud800\u0041"}`, `unpaired surrogate \ud800`},
		{`{"a":"\udc00\ud800"}`, `unpaired surrogate \udc00`},
		{`{"a":1e131072}`, "number at byte 5 has more than 131072 digits before the decimal point"},
		{`{"a":10e131071}`, "more than 131072 digits before"},
		{`{"a":-1.5e-16383}`, "number at byte 5 has more than 16383 digits after the decimal point"},
		{`{"a":0.00e-16382}`, "more than 16383 digits after"},
		{`{"a":0e-20000}`, "more than 16383 digits after"},
		{`{"a":1e99999999999}`, "has an exponent out of range"},
		{`{"a":0.` + strings.Repeat("0", 16384) + `}`, "more than 16383 digits after"},
		{`{"a":1` + strings.Repeat("0", 131072) + `}`, "more than 131072 digits before"},
		{`{"a":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`, ""}, // 1,000 levels
		{`{"a":` + strings.Repeat(`{"b":`, 999) + `1` + strings.Repeat("}", 999) + `}`, ""},
		{`{"a":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, "nested deeper than 1000 arrays and objects at byte 1004"},
		{`{"a":"` + strings.Repeat("[", 2000) + `"}`, ""}, // brackets in a string
		{`[]`, "must be a JSON object"},
		{`{`, "not valid JSON"},
	}
	for _, tc := range cases {
		got := jsonObjectProblem([]byte(tc.in))
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("jsonObjectProblem(%.60q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNumberWrittenLen: the length of a number as PostgreSQL's jsonb
// gives it back (numeric output: no exponent, no sign on zero, the
// literal's scale kept), as PostgreSQL 15 writes each of these out.
func TestNumberWrittenLen(t *testing.T) {
	cases := []struct {
		in, out string
	}{
		{"0", "0"},
		{"-0", "0"},
		{"-0.0", "0.0"},
		{"0.000e2", "0.0"},
		{"0.0e-3", "0.0000"},
		{"0e5", "0"},
		{"-1", "-1"},
		{"100", "100"},
		{"1e0", "1"},
		{"1E+2", "100"},
		{"1.5e3", "1500"},
		{"1.0e5", "100000"},
		{"1e-3", "0.001"},
		{"5e-1", "0.5"},
		{"12e-1", "1.2"},
		{"0.001e3", "1"},
		{"0.0001e4", "1"},
		{"1.50", "1.50"},
		{"1.50e1", "15.0"},
		{"-1.5e-1", "-0.15"},
		{"123.45e-10", "0.000000012345"},
		{"-123.45e-10", "-0.000000012345"},
		{"1e20", "1" + strings.Repeat("0", 20)},
		{"1e131071", "1" + strings.Repeat("0", 131071)},
		{"-9.9e131071", "-99" + strings.Repeat("0", 131070)},
		{"1e-16383", "0." + strings.Repeat("0", 16382) + "1"},
	}
	for _, tc := range cases {
		n := parseNumber([]byte(tc.in))
		if p := n.problem(); p != "" {
			t.Errorf("%s: %s", tc.in, p)
		}
		if got := n.writtenLen(); got != int64(len(tc.out)) {
			t.Errorf("%s: written out in %d bytes, want %d (%.20s)", tc.in, got, len(tc.out), tc.out)
		}
	}
}

// TestPayloadWrittenOut: the payload limit applies to arguments and
// metadata with their numbers written out as stored, so a few bytes of
// exponents cannot stand for megabytes of digits.
func TestPayloadWrittenOut(t *testing.T) {
	const limit = 1000
	fits := []byte(`{"a":1e900,"b":-2.5e-10,"c":0e100000}`) // 901 digits, and 0
	over := []byte(`{"a":1e500,"b":1e500}`)                 // 21 bytes, 1,012 written out
	if err := checkArgs("k", fits, limit); err != nil {
		t.Errorf("args that fit written out: %v", err)
	}
	if err := checkMetadata(fits, limit); err != nil {
		t.Errorf("metadata that fits written out: %v", err)
	}
	checks := map[string]error{"args": checkArgs("k", over, limit), "metadata": checkMetadata(over, limit)}
	for field, err := range checks {
		var bad *InvalidInputError
		if !errors.Is(err, ErrPayloadTooLarge) || !errors.As(err, &bad) || bad.Field != field {
			t.Errorf("%s written out past the limit: %v, want ErrPayloadTooLarge for %s", field, err, field)
		} else if !strings.Contains(bad.Reason, "21 bytes, 1013 with its numbers written out") {
			t.Errorf("%s: reason %q", field, bad.Reason)
		}
	}
	// Only 1e3 grows (to 1000); 1.5E+3 and 1E+0001 shrink, and count as
	// written.
	in := `{"a":1e3,"b":1.5E+3,"c":100,"d":1E+0001}`
	if stored, p := jsonObjectSize([]byte(in)); p != "" || stored != int64(len(in)+1) {
		t.Errorf("stored size of %s: %d (%s), want %d", in, stored, p, len(in)+1)
	}
}
