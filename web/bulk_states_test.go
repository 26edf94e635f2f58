package web_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// TestBulkReachesPastJobsLeftAlone: a bulk confirmation reads only the
// jobs in a state its action applies to, so that MaxBulk jobs it leaves
// alone (here the oldest of a filter with no state, cancelled by a first
// bulk cancel) do not hide the rest: the confirmation of the same filter,
// with a search or without, then lists the jobs left, and running it
// again cancels them.
func TestBulkReachesPastJobsLeftAlone(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{BasicUser: "ops", BasicPassword: testPassword})
		e.http.Transport = basicAuth{"ops", testPassword}
		ids := e.insertArgs(t, web.MaxBulk+5, `{"customer":"needle"}`)
		other := e.insert("elsewhere", "k", `{"customer":"needle"}`)
		first := e.mustGet("/bulk?action=cancel&queue=q")
		if want := fmt.Sprintf("This will <b>cancel</b> <b>%d</b> job(s).", web.MaxBulk); !strings.Contains(first, want) ||
			!strings.Contains(first, "run the action again for the rest") {
			t.Fatalf("the first confirmation does not say %q and to run it again:\n%s", want, first)
		}
		if retry := e.mustGet("/bulk?action=retry&queue=q"); !strings.Contains(retry, "lists them again: narrow the filter") {
			t.Errorf("a bulk retry of more than %d pending jobs says to run it again for the rest:\n%s", web.MaxBulk, retry)
		}
		e.confirmBulk(t, first, fmt.Sprintf("cancel: %d job(s) done", web.MaxBulk))
		rest := ids[web.MaxBulk:]
		for _, path := range []string{"/bulk?action=cancel&queue=q", "/bulk?action=cancel&queue=q&search=needle"} {
			if got := idsOf(t, e.mustGet(path)); !slices.Equal(got, rest) {
				t.Errorf("GET %s after the first %d were cancelled lists %v, want the %d left %v", path, web.MaxBulk, got, len(rest), rest)
			}
		}
		e.confirmBulk(t, e.mustGet("/bulk?action=cancel&queue=q"), fmt.Sprintf("cancel: %d job(s) done", len(rest)))
		checkStates(t, e, ids, leasehold.StateCancelled)
		checkStates(t, e, []int64{other.ID}, leasehold.StatePending)
	})
}

// TestBulkStates: a bulk confirmation lists the jobs of the filter's
// states that its action applies to (of every such state when the filter
// has none), names those states, and says what it leaves alone; when the
// action applies to none of the filter's states it lists no job, rather
// than the jobs of every state.
func TestBulkStates(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{BasicUser: "ops", BasicPassword: testPassword})
		e.http.Transport = basicAuth{"ops", testPassword}
		running := e.insert("q", "k", `{}`).ID
		e.claim(running, "w", time.Minute, false)
		pending := e.insert("q", "k", `{}`).ID
		cancelled := e.insert("q", "k", `{}`).ID
		if _, err := e.client.CancelJob(t.Context(), cancelled); err != nil {
			t.Fatal(err)
		}
		e.insert("elsewhere", "k", `{}`)
		const (
			retryAlone  = "Processing jobs are left alone: they are not retried (cancel them first)."
			cancelAlone = "Finished jobs (completed, failed, cancelled) are left alone: they are not cancelled."
			noState     = "The filter selects no state the action applies to."
		)
		for _, c := range []struct {
			query string
			want  []int64
			says  []string
		}{
			{"action=retry&queue=q", []int64{pending, cancelled},
				[]string{"(pending, completed, failed, cancelled, stuck, reconciling)", retryAlone}},
			{"action=cancel&queue=q", []int64{running, pending}, []string{"(pending, processing, stuck, reconciling)", cancelAlone}},
			{"action=retry&queue=q&state=processing&state=cancelled", []int64{cancelled}, []string{"(cancelled)", retryAlone}},
			{"action=retry&queue=q&state=processing", nil, []string{"No job of this filter can be retried", noState, retryAlone}},
			{"action=cancel&queue=q&state=cancelled&state=completed", nil,
				[]string{"No job of this filter can be cancelled", noState, cancelAlone}},
		} {
			body := e.mustGet("/bulk?" + c.query)
			if got := idsOf(t, body); !slices.Equal(got, c.want) {
				t.Errorf("/bulk?%s lists %v, want %v", c.query, got, c.want)
			}
			for _, s := range c.says {
				if !strings.Contains(body, s) {
					t.Errorf("/bulk?%s does not say %q:\n%s", c.query, s, body)
				}
			}
		}
	})
}
