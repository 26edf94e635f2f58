package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// TestPagesRender: every page answers 200 with its content, on both
// databases.
func TestPagesRender(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		pending := e.insert("default", "email.send", `{"to":"a@example.com"}`)
		running := e.insert("payments", "payment.charge", `{"payment_id":"p-2"}`)
		e.claim(running.ID, "worker-1", time.Minute, false)
		cases := []struct{ path, want string }{
			{"/", `href="/jobs?queue=payments"`},
			{"/jobs", "email.send"},
			{"/jobs/" + strconv.FormatInt(pending.ID, 10), "a@example.com"},
			{"/jobs/" + strconv.FormatInt(running.ID, 10), `id="timeline"`},
			{"/workers", "worker-1"},
			{"/attention", "Expired leases"},
			{"/bulk?action=retry&queue=default", "This will <b>retry</b> <b>1</b> job(s)."},
			{"/static/style.css", "svg.timeline"},
		}
		for _, c := range cases {
			if body := e.mustGet(c.path); !strings.Contains(body, c.want) {
				t.Errorf("GET %s does not show %q:\n%s", c.path, c.want, body)
			}
		}
		if status, _ := e.get("/jobs/999999"); status != http.StatusNotFound {
			t.Errorf("an unknown job = %d, want 404", status)
		}
		if status, _ := e.get("/jobs?state=bogus"); status != http.StatusBadRequest {
			t.Errorf("an unknown state = %d, want 400", status)
		}
	})
}

// TestUnknownStateRefused: every page that filters by state answers 400
// naming an unknown state, given as state or as status (the job's JSON
// name), instead of listing every job; status filters as state does.
func TestUnknownStateRefused(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		pending := e.insert("default", "email.send", `{}`)
		done := e.claim(e.insert("default", "email.send", `{}`).ID, "w", time.Minute, false)
		e.finish(done, leasehold.OutcomeCompleted, "")
		for _, path := range []string{"/jobs?state=bogus", "/jobs?status=bogus", "/jobs?state=pending&status=bogus",
			"/bulk?action=retry&status=bogus", "/bulk?action=cancel&state=bogus"} {
			status, body := e.get(path)
			if status != http.StatusBadRequest || !strings.Contains(body, `unknown state &#34;bogus&#34;: want one of pending,`) {
				t.Errorf("GET %s = %d, want 400 naming the unknown state:\n%s", path, status, body)
			}
		}
		if ids := jobIDs(e.mustGet("/jobs?status=completed")); !slices.Equal(ids, []string{strconv.FormatInt(done.ID, 10)}) {
			t.Errorf("/jobs?status=completed lists %v, want only job %d (not %d)", ids, done.ID, pending.ID)
		}
	})
}

// TestOverviewCounts: the overview counts a queue's jobs by state and its
// live and expired leases.
func TestOverviewCounts(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		for range 3 {
			e.insert("mail", "email.send", `{}`)
		}
		done := e.claim(e.insert("mail", "email.send", `{}`).ID, "w", time.Minute, false)
		e.finish(done, leasehold.OutcomeCompleted, "")
		// What the finishing client's recorder writes (the root package's
		// tests check that clients do).
		if err := d.RecordThroughput(context.Background(), &driver.ThroughputParams{
			Counts: []leasehold.ThroughputCount{{Queue: "mail", Outcome: leasehold.OutcomeCompleted, Jobs: 1}},
		}); err != nil {
			t.Fatal(err)
		}
		j := e.insert("mail", "email.send", `{}`)
		e.claim(j.ID, "w", time.Millisecond, false)
		time.Sleep(20 * time.Millisecond)
		body := e.mustGet("/")
		for _, want := range []string{
			`<a href="/jobs?queue=mail&amp;state=pending">3</a>`,
			`<a href="/jobs?queue=mail&amp;state=processing">1</a>`,
			`<td class="num warn"><a href="/attention">1</a></td>`,
			`<span class="key-ok">1 completed</span>, <span class="key-fail">0 failed, retried or expired</span>`,
			`<td class="num hour">1</td>`,
			`<rect class="ok" x="886`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("overview lacks %s:\n%s", want, body)
			}
		}
		if body := e.mustGet("/attention"); !strings.Contains(body, fmt.Sprintf(`/jobs/%d"`, j.ID)) {
			t.Errorf("attention does not list the expired lease of job %d:\n%s", j.ID, body)
		}
	})
}

// TestJobsFilters: each filter narrows the list, and the id jumps to the
// job.
func TestJobsFilters(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		a := e.insert("q1", "k1", `{}`)
		b := e.insert("q2", "k1", `{}`)
		c := e.insert("q2", "k2", `{}`)
		e.claim(c.ID, "owner-x", time.Minute, false)
		id := func(j *leasehold.JobRow) string { return strconv.FormatInt(j.ID, 10) }
		cases := []struct {
			query string
			want  []string
		}{
			{"", []string{id(c), id(b), id(a)}},
			{"?queue=q2", []string{id(c), id(b)}},
			{"?kind=k1", []string{id(b), id(a)}},
			{"?state=processing", []string{id(c)}},
			{"?state=pending&state=processing&queue=q2", []string{id(c), id(b)}},
			{"?owner=owner-x", []string{id(c)}},
			{"?kind=k1&order=oldest", []string{id(a), id(b)}},
			{"?queue=none", nil},
		}
		for _, tc := range cases {
			if got := jobIDs(e.mustGet("/jobs" + tc.query)); !slices.Equal(got, tc.want) {
				t.Errorf("/jobs%s lists %v, want %v", tc.query, got, tc.want)
			}
		}
		status, _ := e.get("/jobs?id=" + id(b))
		if status != http.StatusSeeOther {
			t.Errorf("/jobs?id= = %d, want a redirect to the job", status)
		}
	})
}

// TestKeysetPaging: pages follow each other by id, newest or oldest
// first, and the last page has no next link.
func TestKeysetPaging(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{PageSize: 2})
		var all []string
		for range 5 {
			all = append(all, strconv.FormatInt(e.insert("q", "k", `{}`).ID, 10))
		}
		walk := func(start string) [][]string {
			var pages [][]string
			path := start
			for path != "" && len(pages) < 10 {
				body := e.mustGet(path)
				pages = append(pages, jobIDs(body))
				path = ""
				if m := nextRE.FindStringSubmatch(body); m != nil {
					path = strings.ReplaceAll(m[1], "&amp;", "&")
				}
			}
			return pages
		}
		newest := walk("/jobs?queue=q")
		want := [][]string{{all[4], all[3]}, {all[2], all[1]}, {all[0]}}
		if fmt.Sprint(newest) != fmt.Sprint(want) {
			t.Errorf("newest first: pages %v, want %v", newest, want)
		}
		oldest := walk("/jobs?queue=q&order=oldest")
		want = [][]string{{all[0], all[1]}, {all[2], all[3]}, {all[4]}}
		if fmt.Sprint(oldest) != fmt.Sprint(want) {
			t.Errorf("oldest first: pages %v, want %v", oldest, want)
		}
	})
}

// TestActionsRoundTrip: a logged-in operator cancels and retries a job,
// and the database changes.
func TestActionsRoundTrip(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		j := e.insert("q", "k", `{}`)
		path := "/jobs/" + strconv.FormatInt(j.ID, 10)
		status, _ := e.post(path+"/cancel", url.Values{"csrf": {e.csrf(path)}})
		if status != http.StatusSeeOther || e.state(j.ID) != leasehold.StateCancelled {
			t.Fatalf("cancel = %d, state %s; want 303, cancelled", status, e.state(j.ID))
		}
		if body := e.mustGet(path + "?done=cancel"); !strings.Contains(body, "The job was cancelled") {
			t.Errorf("the job page does not confirm the cancel:\n%s", body)
		}
		status, _ = e.post(path+"/retry", url.Values{"csrf": {e.csrf(path)}})
		if status != http.StatusSeeOther || e.state(j.ID) != leasehold.StatePending {
			t.Fatalf("retry = %d, state %s; want 303, pending", status, e.state(j.ID))
		}
		// A job whose state refuses the action: 409, nothing changes.
		e.claim(j.ID, "w", time.Minute, false)
		if status, _ := e.post(path+"/retry", url.Values{"csrf": {e.csrf(path)}}); status != http.StatusConflict {
			t.Errorf("retry of a processing job = %d, want 409", status)
		}
		checkRetryCompleted(t, e)
		// The bearer token needs no CSRF token (a browser never sends it).
		k := e.insert("q", "k", `{}`)
		status, _ = e.post("/jobs/"+strconv.FormatInt(k.ID, 10)+"/cancel", nil, "Authorization", "Bearer "+testToken)
		if status != http.StatusSeeOther || e.state(k.ID) != leasehold.StateCancelled {
			t.Errorf("cancel with the bearer token = %d, state %s", status, e.state(k.ID))
		}
	})
}

// checkRetryCompleted checks that the page of a completed job asks to
// confirm its retry, that a retry without the confirmation is refused
// (409, the job left completed), and that one with it makes the job
// pending.
func checkRetryCompleted(t *testing.T, e *env) {
	t.Helper()
	j := e.ended("q", leasehold.OutcomeCompleted)
	path := "/jobs/" + strconv.FormatInt(j.ID, 10)
	if body := e.mustGet(path); !strings.Contains(body, `id="retry-completed"`) || !strings.Contains(body, "Run again") {
		t.Errorf("the page of a completed job does not ask to confirm its retry:\n%s", body)
	}
	status, body := e.post(path+"/retry", url.Values{"csrf": {e.csrf(path)}})
	if status != http.StatusConflict || e.state(j.ID) != leasehold.StateCompleted || !strings.Contains(body, "runs its handler again") {
		t.Errorf("retry of a completed job, not confirmed = %d, state %s; want 409, completed:\n%s", status, e.state(j.ID), body)
	}
	if n := strings.Count(body, fmt.Sprintf("retry job %d", j.ID)); n != 1 {
		t.Errorf("the refusal names the action %d times, want once:\n%s", n, body)
	}
	status, _ = e.post(path+"/retry", url.Values{"csrf": {e.csrf(path)}, "completed": {"1"}})
	if status != http.StatusSeeOther || e.state(j.ID) != leasehold.StatePending {
		t.Errorf("retry of a completed job, confirmed = %d, state %s; want 303, pending", status, e.state(j.ID))
	}
}

// TestBulkAction: the confirmation counts the jobs the action touches,
// leaving out those whose state refuses it, and the confirmed action
// changes exactly those.
func TestBulkAction(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{BasicUser: "ops", BasicPassword: testPassword})
		e.http.Transport = basicAuth{"ops", testPassword}
		var ids []int64
		for range 3 {
			ids = append(ids, e.insert("bulk", "k", `{}`).ID)
		}
		running := e.insert("bulk", "k", `{}`)
		e.claim(running.ID, "w", time.Minute, false)
		other := e.insert("elsewhere", "k", `{}`)
		body := e.mustGet("/bulk?action=cancel&queue=bulk&state=pending&state=processing")
		if !strings.Contains(body, "This will <b>cancel</b> <b>4</b> job(s).") {
			t.Fatalf("cancel confirmation:\n%s", body)
		}
		body = e.mustGet("/bulk?action=retry&queue=bulk")
		if !strings.Contains(body, "<b>3</b> job(s)") || !strings.Contains(body, "Processing jobs are left alone") {
			t.Fatalf("retry confirmation does not leave the processing job out:\n%s", body)
		}
		form := url.Values{"csrf": {csrfRE.FindStringSubmatch(body)[1]}, "action": {"cancel"}}
		for _, id := range ids[:2] {
			form.Add("id", strconv.FormatInt(id, 10))
		}
		status, body := e.post("/bulk", form)
		if status != http.StatusOK || !strings.Contains(body, "cancel: 2 job(s) done") {
			t.Fatalf("bulk cancel = %d:\n%s", status, body)
		}
		for i, id := range ids {
			want := leasehold.StateCancelled
			if i == 2 {
				want = leasehold.StatePending
			}
			if got := e.state(id); got != want {
				t.Errorf("job %d after the bulk cancel: %s, want %s", id, got, want)
			}
		}
		if e.state(other.ID) != leasehold.StatePending {
			t.Errorf("a job of another queue was touched")
		}
	})
}

// TestBulkRetryCompleted: a bulk retry counts the completed jobs it would
// run again, retries them only when the form confirms it, and refuses
// each of them otherwise, naming it.
func TestBulkRetryCompleted(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		done := []int64{e.ended("bulkc", leasehold.OutcomeCompleted).ID, e.ended("bulkc", leasehold.OutcomeCompleted).ID}
		e.ended("bulkc", leasehold.OutcomeFailed)
		late := e.insert("bulkc", "k", `{}`) // pending when the page is shown, completed before the post
		body := e.mustGet("/bulk?action=retry&queue=bulkc")
		if !strings.Contains(body, "<b>4</b> job(s)") || !strings.Contains(body, "2 of them completed") || !strings.Contains(body, `id="retry-completed"`) {
			t.Fatalf("retry confirmation does not count the completed jobs:\n%s", body)
		}
		form := formOf(body)
		if !e.finish(e.claim(late.ID, "w", time.Minute, false), leasehold.OutcomeCompleted, "") {
			t.Fatal("Finish refused")
		}
		status, body := e.post("/bulk", form)
		if status != http.StatusOK || !strings.Contains(body, "retry: 1 job(s) done, 3 refused") || !strings.Contains(body, "runs its handler again") {
			t.Fatalf("bulk retry, completed jobs not confirmed = %d:\n%s", status, body)
		}
		for _, id := range done {
			if got := e.state(id); got != leasehold.StateCompleted {
				t.Errorf("completed job %d after an unconfirmed bulk retry: %s", id, got)
			}
		}
		form.Set("completed", "1")
		if status, body := e.post("/bulk", form); status != http.StatusOK || !strings.Contains(body, "retry: 3 job(s) done, 1 refused") {
			t.Fatalf("bulk retry, completed jobs confirmed = %d:\n%s", status, body)
		}
		for _, id := range done {
			if got := e.state(id); got != leasehold.StatePending {
				t.Errorf("completed job %d after a confirmed bulk retry: %s, want pending", id, got)
			}
		}
		// The box confirmed the jobs completed when the page was shown,
		// not one that completed after.
		if got := e.state(late.ID); got != leasehold.StateCompleted {
			t.Errorf("job completed after the confirmation page, after a confirmed bulk retry: %s, want completed", got)
		}
	})
}

// basicAuth adds basic-auth credentials to every request.
type basicAuth struct{ user, password string }

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.password)
	return http.DefaultTransport.RoundTrip(r)
}

// TestLeaseTimelineTakeover: a job whose lease expired and was taken over
// shows the expired lease (hatched, fenced) and the takeover.
func TestLeaseTimelineTakeover(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		j := e.takenOver()
		body := e.mustGet("/jobs/" + strconv.FormatInt(j.ID, 10))
		for _, want := range []string{
			`<g class="attempt outcome-lease_expired" data-attempt="1">`,
			`<g class="attempt outcome-running" data-attempt="2">`,
			`class="unrenewed"`, `class="fence"`, `class="heartbeat"`, `class="takeover"`, `class="granted"`,
			"taken over by owner-b; later writes of owner-a refused",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the timeline lacks %s:\n%s", want, body)
			}
		}
	})
}

var nextRE = regexp0(`<a href="([^"]+)" rel="next">`)

// TestRescueAction: the attention page's watcher pass moves an expired
// lease back to pending and lists it.
func TestRescueAction(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		j := e.insert("q", "k", `{}`)
		e.claim(j.ID, "gone", time.Millisecond, false)
		time.Sleep(20 * time.Millisecond)
		status, body := e.post("/rescue", nil, "Authorization", "Bearer "+testToken)
		if status != http.StatusOK || !strings.Contains(body, "The stuck watcher moved 1 job(s).") {
			t.Fatalf("rescue = %d:\n%s", status, body)
		}
		if got := e.state(j.ID); got != leasehold.StatePending {
			t.Errorf("after the watcher pass: %s, want pending", got)
		}
	})
}
