package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// TestRenderJobShowsHTMLCharacters: jobs show prints <, > and & in a
// job's arguments and metadata as characters, as PostgreSQL's jsonb gives
// them back, also when the stored text holds json.Marshal's \u003c
// escapes (SQLite keeps the text as written); a string holding a
// backslash and u003c keeps them.
func TestRenderJobShowsHTMLCharacters(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	args, err := json.Marshal(map[string]string{"url": "https://x.example/?a=1&b=2", "tag": "<b>", "raw": `\u003c`})
	if err != nil {
		t.Fatal(err)
	}
	j := &leasehold.JobRow{ID: 1, Kind: "k", Queue: "q", State: leasehold.StatePending, Args: args,
		Metadata: json.RawMessage(`{"note":"\u003ci\u003e"}`), MaxAttempts: 1, CreatedAt: now, RunAt: now}
	got := renderJobText(t, j, now)
	for _, want := range []string{`"url":"https://x.example/?a=1&b=2"`, `"tag":"<b>"`, `"raw":"\\u003c"`, `{"note":"<i>"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("jobs show lacks %s:\n%s", want, got)
		}
	}
}
