package web

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPrettyUnescapesHTML: arguments stored by json.Marshal (as SQLite
// keeps them) show <, > and & as the characters, as PostgreSQL's jsonb
// gives them back, while a string holding a backslash followed by u003c
// keeps it.
func TestPrettyUnescapesHTML(t *testing.T) {
	raw, err := json.Marshal(map[string]string{"url": "https://x.example/?a=1&b=2", "html": "<b>x</b>"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ raw, want string }{
		{string(raw), "{\n  \"html\": \"<b>x</b>\",\n  \"url\": \"https://x.example/?a=1&b=2\"\n}"},
		{`{"s":"\\u003c"}`, "{\n  \"s\": \"\\\\u003c\"\n}"},
		{`["\\\u003c\u003E"]`, "[\n  \"\\\\<>\"\n]"},
	} {
		if got := pretty(json.RawMessage(tc.raw)).Text; got != tc.want {
			t.Errorf("pretty(%s) =\n%s\nwant\n%s", tc.raw, got, tc.want)
		}
	}
	deep := strings.Repeat("[", 2000) + `"\u0026"` + strings.Repeat("]", 2000)
	if got := pretty(json.RawMessage(deep)); !got.Flat || !strings.Contains(got.Text, `["&"]`) {
		t.Errorf("compacted JSON keeps the escapes: flat %v, %q…", got.Flat, got.Text[1990:2010])
	}
}
