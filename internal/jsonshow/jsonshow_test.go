package jsonshow

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestIndentedSize: the one-pass estimate is the size json.Indent makes,
// for values with strings, escapes, empty and nested containers; past the
// limit it gives up.
func TestIndentedSize(t *testing.T) {
	for _, src := range []string{
		`1`, `"a"`, `{}`, `[]`, `[ ]`, `{"a":1}`, `{ "a" : [ 1 , 2 ] , "b" : { } }`,
		`{"s":"a,b:{[\"]}\\","t":[[],[[]],{"x":[null,true,false]}]}`,
		`[[[[[[1,2],[3]]]]],{"k":{"k":{"k":{}}}}]`,
		"{\n\t\"a\": [1,\r\n 2]}",
		`{"u":"\u00e9\"\\\/"}`,
	} {
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(src), "", "  "); err != nil {
			t.Fatalf("Indent(%s): %v", src, err)
		}
		if got := indentedSize([]byte(src), 1<<20); got != buf.Len() {
			t.Errorf("indentedSize(%s) = %d, json.Indent makes %d:\n%s", src, got, buf.Len(), buf.String())
		}
	}
	deep := strings.Repeat("[", 500) + strings.Repeat("1,", 1000) + "1" + strings.Repeat("]", 500)
	if got := indentedSize([]byte(deep), 4*len(deep)+indentSlack); got != -1 {
		t.Errorf("indentedSize of %d bytes nested 500 deep = %d, want -1 (over the limit)", len(deep), got)
	}
	if text, flat := Indent([]byte(deep)); !flat || string(text) != deep {
		t.Errorf("Indent of deep JSON: flat %v, %d bytes; want it compacted", flat, len(text))
	}
}
