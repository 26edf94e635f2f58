package web_test

import (
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testlog"
	"github.com/leasehold/leasehold/web"
)

// TestSearchFilter: the search box narrows the list to jobs whose args or
// metadata hold the text, and survives paging links.
func TestSearchFilter(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		a := e.insert("q", "k", `{"customer":"ACME Corp"}`)
		e.insert("q", "k", `{"customer":"Globex"}`)
		got := jobIDs(e.mustGet("/jobs?search=acme"))
		if want := []string{strconv.FormatInt(a.ID, 10)}; !slices.Equal(got, want) {
			t.Fatalf("/jobs?search=acme lists %v, want %v", got, want)
		}
		if body := e.mustGet("/jobs?search=acme"); !strings.Contains(body, `value="acme"`) {
			t.Error("the search box does not keep the search")
		}
	})
}

// TestDeleteFinishedJob: a finished job can be deleted with its history;
// an unfinished one is refused and kept.
func TestDeleteFinishedJob(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		pending := e.insert("q", "k", `{}`)
		path := "/jobs/" + strconv.FormatInt(pending.ID, 10)
		if strings.Contains(e.mustGet(path), `id="delete"`) {
			t.Error("a pending job's page offers to delete it")
		}
		if status, _ := e.post(path+"/delete", url.Values{"csrf": {e.csrf(path)}}); status != http.StatusConflict {
			t.Errorf("delete of a pending job = %d, want 409", status)
		}
		if e.state(pending.ID) != leasehold.StatePending {
			t.Fatal("a refused delete changed the job")
		}
		done := e.insert("q", "k", `{}`)
		e.finish(e.claim(done.ID, "w", time.Minute, false), leasehold.OutcomeCompleted, "")
		path = "/jobs/" + strconv.FormatInt(done.ID, 10)
		if !strings.Contains(e.mustGet(path), `id="delete"`) {
			t.Fatal("a completed job's page has no delete button")
		}
		status, _ := e.post(path+"/delete", url.Values{"csrf": {e.csrf(path)}})
		if status != http.StatusSeeOther {
			t.Fatalf("delete = %d, want 303", status)
		}
		if _, err := d.GetJob(e.t.Context(), done.ID); !errors.Is(err, leasehold.ErrJobNotFound) {
			t.Fatalf("after delete GetJob = %v, want ErrJobNotFound", err)
		}
		if body := e.mustGet("/jobs?deleted=" + strconv.FormatInt(done.ID, 10)); !strings.Contains(body, `id="deleted"`) {
			t.Error("the jobs page does not confirm the delete")
		}
	})
}

// TestPauseResumeQueue: the overview pauses and resumes a queue, and the
// database records it; without a CSRF token nothing changes.
func TestPauseResumeQueue(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		e.insert("payments", "k", `{}`)
		if status, _ := e.post("/queues/payments/pause", url.Values{}); status == http.StatusSeeOther {
			t.Fatal("a pause without a CSRF token was accepted")
		}
		if e.paused("payments") {
			t.Fatal("a refused pause paused the queue")
		}
		if !strings.Contains(e.mustGet("/"), `id="pause-payments"`) {
			t.Fatal("the overview offers no pause button")
		}
		if status, _ := e.post("/queues/payments/pause", url.Values{"csrf": {e.csrf("/")}}); status != http.StatusSeeOther || !e.paused("payments") {
			t.Fatalf("pause = %d, paused %v; want 303, paused", status, e.paused("payments"))
		}
		if body := e.mustGet("/"); !strings.Contains(body, `id="resume-payments"`) || !strings.Contains(body, "paused since") {
			t.Fatal("the overview does not show the queue paused with a resume button")
		}
		if status, _ := e.post("/queues/payments/resume", url.Values{"csrf": {e.csrf("/")}}); status != http.StatusSeeOther || e.paused("payments") {
			t.Fatalf("resume = %d, paused %v; want 303, not paused", status, e.paused("payments"))
		}
	})
}

// paused reports whether the database records queue as paused.
func (e *env) paused(queue string) bool {
	e.t.Helper()
	qs, err := e.d.QueueStats(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, q := range qs {
		if q.Queue == queue {
			return q.Paused
		}
	}
	return false
}

// TestPauseResumeQueueWithSlash: a queue whose name holds "/" (a valid
// name) is paused and resumed through the URLs the overview renders, at
// the root and under a prefix, and its link lists its jobs.
func TestPauseResumeQueueWithSlash(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		for _, prefix := range []string{"", "/admin/jobs"} {
			e := newEnv(t, d, web.Options{Token: testToken, Prefix: prefix})
			e.login()
			queue := "tenant/a" + prefix
			j := e.insert(queue, "k", `{}`)
			for _, want := range []bool{true, false} {
				body := e.mustGet("/")
				m := formRE(prefix, queue).FindStringSubmatch(body)
				if m == nil {
					t.Fatalf("the overview offers no pause or resume form under %q:\n%s", prefix, body)
				}
				if status, _ := e.post(m[1], url.Values{"csrf": {e.csrf("/")}}); status != http.StatusSeeOther || e.paused(queue) != want {
					t.Fatalf("POST %s%s = %d, paused %v; want 303, paused %v", prefix, m[1], status, e.paused(queue), want)
				}
			}
			linkRE := regexp.MustCompile(`href="` + prefix + `(/jobs\?queue=[^"&]*)">` + regexp.QuoteMeta(queue) + `</a>`)
			link := linkRE.FindStringSubmatch(e.mustGet("/"))
			if link == nil {
				t.Fatalf("the overview links to no queue's jobs under %q", prefix)
			}
			if got, want := jobIDs(e.mustGet(html.UnescapeString(link[1]))), []string{strconv.FormatInt(j.ID, 10)}; !slices.Equal(got, want) {
				t.Errorf("the queue's link %s lists %v, want %v", link[1], got, want)
			}
		}
	})
}

// formRE matches the path (under prefix) of the form that pauses or
// resumes queue on the overview, found by its button's id.
func formRE(prefix, queue string) *regexp.Regexp {
	return regexp.MustCompile(`action="` + prefix + `(/queues/[^"]*/(?:pause|resume))" class="inline">` +
		`<input type="hidden" name="csrf" value="[0-9a-f]+"><button class="small" id="(?:pause|resume)-` + regexp.QuoteMeta(queue) + `"`)
}

// TestRetryOfHeldKeyIsConflict: a retry refused because another job holds
// the job's unique key now is a 409 saying so in one line, without the
// database's constraint text, and logs no error: it is a refusal, not a
// failure of the dashboard. A bulk retry reports it the same way.
func TestRetryOfHeldKeyIsConflict(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		var log testlog.Buffer
		e := newEnv(t, d, web.Options{Token: testToken, Logger: log.Logger()})
		e.login()
		opts := &leasehold.InsertOpts{UniqueKey: "k1", UniqueScope: leasehold.UniqueWhileUnfinished}
		insert := func() int64 {
			res, err := e.client.Insert(e.t.Context(), leasehold.RawArgs{KindName: "k", JSON: json.RawMessage(`{}`)}, opts)
			if err != nil || res.Duplicate {
				t.Fatalf("Insert = %+v, %v", res, err)
			}
			return res.Job.ID
		}
		first := insert()
		if _, err := e.client.CancelJob(e.t.Context(), first); err != nil {
			t.Fatal(err)
		}
		insert()
		id := strconv.FormatInt(first, 10)
		want := "leasehold: retry job " + id + ": another job holds the job&#39;s unique key: let that job finish, or cancel it, first"
		path := "/jobs/" + id
		status, body := e.post(path+"/retry", url.Values{"csrf": {e.csrf(path)}})
		if status != http.StatusConflict || !strings.Contains(body, want) || strings.Contains(body, "constraint") {
			t.Errorf("retry of a job whose key another job holds = %d, want 409 saying %q, without the constraint:\n%s", status, want, body)
		}
		status, body = e.post("/bulk", url.Values{"csrf": {e.csrf("/jobs")}, "action": {"retry"}, "id": {id}})
		if status != http.StatusOK || !strings.Contains(body, "<li>"+want+"</li>") || strings.Contains(body, "constraint") {
			t.Errorf("bulk retry of a job whose key another job holds = %d, want it refused saying %q, without the constraint:\n%s", status, want, body)
		}
		if strings.Contains(log.String(), "level=ERROR") {
			t.Errorf("a refused retry logged an error:\n%s", log.String())
		}
		if got := e.state(first); got != leasehold.StateCancelled {
			t.Errorf("job after its refused retries: %s, want cancelled", got)
		}
	})
}
