package web_test

import (
	"encoding/json"
	"fmt"
	"html"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/web"
)

// nextLink returns the path of the page's rel="next" link, "" when none.
func nextLink(t *testing.T, body string) string {
	t.Helper()
	m := nextRE.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// TestSearchReadsBoundedWindows: a search reads 2,000 ids per page, newest
// first: a page whose window holds no match says which jobs it searched
// and links on below them, where the match is found; oldest first goes up.
func TestSearchReadsBoundedWindows(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		needle := e.insert("q", "k", `{"customer":"needle"}`)
		batch := make([]leasehold.InsertManyParams, 2500)
		for i := range batch {
			batch[i] = leasehold.InsertManyParams{Args: leasehold.RawArgs{KindName: "k", JSON: json.RawMessage(`{"customer":"hay"}`)},
				Opts: &leasehold.InsertOpts{Queue: "q"}}
		}
		res, err := e.client.InsertMany(t.Context(), nil, batch)
		if err != nil {
			t.Fatalf("InsertMany: %v", err)
		}
		newest := res[len(res)-1].Job.ID
		first := e.mustGet("/jobs?search=needle")
		if ids := jobIDs(first); len(ids) != 0 {
			t.Errorf("the newest window lists %v, want no match", ids)
		}
		want := "searched jobs " + strconv.FormatInt(newest-1999, 10) + " to " + strconv.FormatInt(newest, 10)
		if !strings.Contains(first, want) || !strings.Contains(first, "search on »") {
			t.Fatalf("the first page does not say %q and link on:\n%s", want, first)
		}
		second := e.mustGet(nextLink(t, first))
		if ids := jobIDs(second); !slices.Equal(ids, []string{strconv.FormatInt(needle.ID, 10)}) {
			t.Errorf("the next window lists %v, want the needle %d", ids, needle.ID)
		}
		if next := nextLink(t, second); next != "" {
			t.Errorf("the window that reached the first job links on to %s", next)
		}
		up := e.mustGet("/jobs?search=needle&order=oldest")
		if ids := jobIDs(up); !slices.Equal(ids, []string{strconv.FormatInt(needle.ID, 10)}) {
			t.Errorf("oldest first lists %v, want the needle", ids)
		}
		if next := nextLink(t, up); !strings.Contains(next, "after=") {
			t.Errorf("oldest first links on to %q, want the window above", next)
		}
	})
}

// TestFinishedListedByFinishTime: a list of finished jobs is ordered by
// finish time, newest first, and pages on with the finish-time keyset.
func TestFinishedListedByFinishTime(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{PageSize: 2})
		jobs := []*leasehold.JobRow{e.insert("q", "k", `{}`), e.insert("q", "k", `{}`), e.insert("q", "k", `{}`)}
		var order []string
		for _, i := range []int{2, 0, 1} {
			e.finish(e.claim(jobs[i].ID, "w", time.Minute, false), leasehold.OutcomeCompleted, "")
			order = append([]string{strconv.FormatInt(jobs[i].ID, 10)}, order...)
			time.Sleep(5 * time.Millisecond)
		}
		first := e.mustGet("/jobs?state=completed")
		if ids := jobIDs(first); !slices.Equal(ids, order[:2]) {
			t.Errorf("first page lists %v, want %v (newest finished first)", ids, order[:2])
		}
		next := nextLink(t, first)
		if !strings.Contains(next, "finished=") {
			t.Fatalf("next link %q carries no finish time", next)
		}
		if ids := jobIDs(e.mustGet(next)); !slices.Equal(ids, order[2:]) {
			t.Errorf("second page lists %v, want %v", ids, order[2:])
		}
		if !strings.Contains(first, "listed by finish time") {
			t.Error("the page does not say finished jobs are listed by finish time")
		}
	})
}

// TestAttentionListsReconciling: a job whose expired lease went to
// reconciling is listed on the attention page, with its actions.
func TestAttentionListsReconciling(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		j, _ := e.reconciling()
		body := e.mustGet("/attention")
		section := body[strings.Index(body, "Reconciling jobs"):]
		if !strings.Contains(section, "/jobs/"+strconv.FormatInt(j.ID, 10)+`"`) || !strings.Contains(section, "Retry") {
			t.Errorf("the attention page does not list the reconciling job %d with its actions:\n%s", j.ID, body)
		}
	})
}

// reconciling returns a job whose lease expired in a reconciling queue,
// now reconciling, and the id of its reconcile job.
func (e *env) reconciling() (*leasehold.JobRow, int64) {
	e.t.Helper()
	j := e.insert("recq", "payment.charge", `{}`)
	j = e.claim(j.ID, "gone", time.Millisecond, false)
	time.Sleep(20 * time.Millisecond)
	target := statemachine.ReconcileTarget{Kind: "leasehold.reconcile", Queue: "reconcile", MaxAttempts: 5}
	decide := func(j *leasehold.JobRow) driver.Transition { return statemachine.Reconcile(j, target) }
	res, err := e.d.RescueExpired(e.t.Context(), &driver.RescueParams{Decide: decide})
	if err != nil || len(res) != 1 || res[0].ReconcileJobID == 0 {
		e.t.Fatalf("RescueExpired = %+v, %v; want job %d reconciling with a reconcile job", res, err, j.ID)
	}
	if s := e.state(j.ID); s != leasehold.StateReconciling {
		e.t.Fatalf("job is %s, want reconciling", s)
	}
	return j, res[0].ReconcileJobID
}

// TestJobPageShowsResolution: the job page's history shows the
// reconciler's decision recorded on the expired attempt.
func TestJobPageShowsResolution(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		j, recID := e.reconciling()
		rec := e.claim(recID, "reconciler", time.Minute, false)
		tr, err := statemachine.Resolve(statemachine.ResolveComplete, 0, "provider charged")
		if err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("completed by reconcile job %d (attempt 1): provider charged", recID)
		_, err = d.Resolve(t.Context(), nil, &driver.ResolveParams{ID: rec.ID, Owner: "reconciler", LeaseAttempt: rec.Attempt,
			JobID: j.ID, Attempt: j.Attempt, Transition: tr, Resolution: text})
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		body := e.mustGet("/jobs/" + strconv.FormatInt(j.ID, 10))
		table := body[strings.Index(body, `id="attempts"`):]
		if !strings.Contains(table, "<th>resolution</th>") || !strings.Contains(table, `<td class="resolution">`+text+"</td>") {
			t.Errorf("the job page's history does not show the resolution %q:\n%s", text, table)
		}
		plain := e.mustGet("/jobs/" + strconv.FormatInt(rec.ID, 10))
		if strings.Contains(plain, "<th>resolution</th>") {
			t.Error("the page of a job with no resolution has a resolution column")
		}
	})
}
