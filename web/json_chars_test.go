package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// TestJobPageArgsCharacters: on both databases the job page shows the
// arguments' <, > and & as characters (html/template escaping them for
// HTML), never json.Marshal's \u003c escapes, and a literal backslash
// followed by u003c as it is.
func TestJobPageArgsCharacters(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		args, err := json.Marshal(map[string]string{"html": "<script>alert(1)</script>", "q": "a=1&b=2", "lit": `\u003c`})
		if err != nil {
			t.Fatal(err)
		}
		j := e.insert("q", "k", string(args))
		body := e.mustGet(fmt.Sprintf("/jobs/%d", j.ID))
		i := strings.Index(body, `id="args">`)
		if i < 0 {
			t.Fatalf("no arguments:\n%s", body)
		}
		shown := body[i:]
		shown = shown[:strings.Index(shown, "</pre>")]
		for _, want := range []string{`&lt;script&gt;alert(1)&lt;/script&gt;`, `a=1&amp;b=2`, `\\u003c`} {
			if !strings.Contains(shown, want) {
				t.Errorf("the arguments do not show %s:\n%s", want, shown)
			}
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(shown, `"\u003c`) || strings.Contains(shown, `\u0026`) {
			t.Errorf("the arguments are shown unescaped for HTML or with the encoder's escapes:\n%s", shown)
		}
	})
}
