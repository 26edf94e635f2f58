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

// attemptsTable returns the history table of the job page body.
func attemptsTable(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, `id="attempts"`)
	if i < 0 {
		t.Fatalf("no history table:\n%s", body)
	}
	table := body[i:]
	return table[:strings.Index(table, "</table>")]
}

// TestJobPageOwnerLinks: the history table links an attempt's owner to
// the jobs it holds only for the attempt holding the job's lease (the
// owner filter matches the job's current lease owner, so for an ended
// attempt the link would list nothing); the link lists the job.
func TestJobPageOwnerLinks(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		done := e.ended("q", leasehold.OutcomeCompleted)
		if body := e.mustGet(fmt.Sprintf("/jobs/%d", done.ID)); strings.Contains(body, "owner=") {
			t.Errorf("the page of a completed job links an owner:\n%s", attemptsTable(t, body))
		}
		j := e.takenOver()
		table := attemptsTable(t, e.mustGet(fmt.Sprintf("/jobs/%d", j.ID)))
		if !strings.Contains(table, `href="/jobs?owner=owner-b"`) {
			t.Errorf("the current attempt's owner is not linked:\n%s", table)
		}
		if strings.Contains(table, "owner=owner-a") || !strings.Contains(table, "<td>owner-a</td>") {
			t.Errorf("the taken-over attempt's owner is not shown as plain text:\n%s", table)
		}
		if ids := jobIDs(e.mustGet("/jobs?owner=owner-b")); len(ids) != 1 || ids[0] != fmt.Sprint(j.ID) {
			t.Errorf("the owner link lists %v, want [%d]", ids, j.ID)
		}
	})
}

// TestJobPageExpiredUnrescued: the page of a processing job whose lease
// expired and that no watcher has rescued draws the lease unrenewed
// (hatched) with its expiry marked, not granted, and still links the
// owner that holds the lease.
func TestJobPageExpiredUnrescued(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		j := e.insert("q", "k", `{}`)
		e.claim(j.ID, "gone", 200*time.Millisecond, false)
		time.Sleep(300 * time.Millisecond) // the lease only gets more expired
		body := e.mustGet(fmt.Sprintf("/jobs/%d", j.ID))
		svg := body[strings.Index(body, `id="timeline"`):]
		svg = svg[:strings.Index(svg, "</svg>")]
		if strings.Contains(svg, `class="granted"`) || !strings.Contains(svg, `class="unrenewed"`) || !strings.Contains(svg, `class="expiry"`) {
			t.Errorf("the expired lease is not drawn unrenewed with its expiry:\n%s", svg)
		}
		if !strings.Contains(attemptsTable(t, body), `href="/jobs?owner=gone"`) {
			t.Errorf("the owner still holding the expired lease is not linked:\n%s", attemptsTable(t, body))
		}
	})
}
