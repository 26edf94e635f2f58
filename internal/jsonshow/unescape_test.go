package jsonshow

import (
	"encoding/json"
	"testing"
)

// TestUnescapeHTML: the \u003c, \u003e and \u0026 escapes of JSON strings
// (json.Marshal's, in either case of hex digit) become the characters; an
// escaped backslash followed by u003c, other \u escapes, and text outside
// strings are kept; the result decodes to the same value.
func TestUnescapeHTML(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{"a":"\u003cb\u003e \u0026"}`, `{"a":"<b> &"}`},
		{`"\u003C\u003E\u0026"`, `"<>&"`},
		{`{"s":"\\u003c"}`, `{"s":"\\u003c"}`},
		{`{"s":"\\\u003c"}`, `{"s":"\\<"}`},
		{`{"s":"\\\\u003c"}`, `{"s":"\\\\u003c"}`},
		{`{"s":"\"\u0026\""}`, `{"s":"\"&\""}`},
		{`{"\u003ck":"\u2028\u00e9\u003"}`, `{"<k":"\u2028\u00e9\u003"}`},
		{`[1, true, null, "x"]`, `[1, true, null, "x"]`},
		{`"\u003`, `"\u003`},
		{`"\u00\`, `"\u00\`},
		{``, ``},
	} {
		got := UnescapeHTML([]byte(tc.src))
		if string(got) != tc.want {
			t.Errorf("UnescapeHTML(%s) = %s, want %s", tc.src, got, tc.want)
			continue
		}
		var before, after any
		if json.Unmarshal([]byte(tc.src), &before) == nil {
			if err := json.Unmarshal(got, &after); err != nil {
				t.Errorf("UnescapeHTML(%s) = %s: not JSON: %v", tc.src, got, err)
			} else if b1, _ := json.Marshal(before); string(b1) != string(mustMarshal(t, after)) {
				t.Errorf("UnescapeHTML(%s) = %s decodes to another value", tc.src, got)
			}
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
