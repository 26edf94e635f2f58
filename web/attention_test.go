package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// TestAttentionClaimsAndBudget: the attention page shows a job's claims
// and its charged attempts out of its retry budget in separate cells, as
// the CLI does (CLAIMS, CHARGED/MAX): a job of one attempt released once
// (not charged) whose second lease expired shows 2 claims and 1/1, never
// claims over the budget ("2/1").
func TestAttentionClaimsAndBudget(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		res, err := e.client.Insert(e.t.Context(), leasehold.RawArgs{KindName: "k", JSON: []byte(`{}`)},
			&leasehold.InsertOpts{Queue: "budget", MaxAttempts: 1})
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		if !e.finish(e.claim(res.Job.ID, "w", time.Minute, false), leasehold.OutcomeReleased, "") {
			t.Fatal("release refused")
		}
		e.claim(res.Job.ID, "w", time.Millisecond, false)
		time.Sleep(50 * time.Millisecond) // the second lease expires
		body := e.mustGet("/attention")
		head := `<th class="num">claims</th><th class="num">charged/max</th>`
		row := `<td class="num">2</td><td class="num">1/1</td>`
		if !strings.Contains(body, fmt.Sprintf(`/jobs/%d"`, res.Job.ID)) || !strings.Contains(body, head) || !strings.Contains(body, row) {
			t.Errorf("attention page, job of 1 attempt released once then expired: want the columns %s and the cells %s:\n%s", head, row, body)
		}
	})
}
