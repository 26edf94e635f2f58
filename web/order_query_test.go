package web_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// orderOptionRE finds the values the jobs page's order select offers.
var orderOptionRE = regexp.MustCompile(`<option value="([^"]*)"[^>]*>(?:newest|oldest) first</option>`)

// TestJobsUnknownOrderRefused: the jobs list and the bulk confirmation
// answer 400, naming the orders there are, to an order they do not know,
// as they do to an unknown state, rather than list newest first; every
// order the page's own form offers is taken.
func TestJobsUnknownOrderRefused(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		e.insert("q", "k", `{}`)
		for _, path := range []string{"/jobs?", "/bulk?action=retry&"} {
			for _, o := range []string{"asc", "Oldest", "ascending", "desc"} {
				status, body := e.get(path + "order=" + o)
				if status != http.StatusBadRequest || !strings.Contains(body, "unknown order &#34;"+o+"&#34;: want newest or oldest") {
					t.Errorf("GET %sorder=%s = %d, want 400 naming the orders:\n%s", path, o, status, body)
				}
			}
		}
		offered := orderOptionRE.FindAllStringSubmatch(e.mustGet("/jobs"), -1)
		if len(offered) != 2 {
			t.Fatalf("the jobs page offers the orders %v, want two", offered)
		}
		for _, o := range append([]string{""}, offered[0][1], offered[1][1]) {
			if status, body := e.get("/jobs?order=" + o); status != http.StatusOK {
				t.Errorf("GET /jobs?order=%s (the form's) = %d:\n%s", o, status, body)
			}
		}
	})
}

// TestJobsFinishedCursorOnlyByFinishTime: a finish-time cursor on a list
// not ordered by finish time (an unfinished state, no state, a search) is
// refused with 400 rather than dropped; the pages' own next links on a
// list ordered by finish time, newest or oldest first, are followed.
func TestJobsFinishedCursorOnlyByFinishTime(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{PageSize: 1})
		for range 3 {
			j := e.insert("q", "k", `{"customer":"needle"}`)
			e.finish(e.claim(j.ID, "w", time.Minute, false), leasehold.OutcomeCompleted, "")
		}
		e.insert("q", "k", `{}`)
		finished := strconv.FormatInt(time.Now().UnixMicro(), 10)
		for _, q := range []string{"before=3", "state=pending&before=3", "state=completed&state=pending&before=3",
			"state=completed&search=needle&before=3", "order=oldest&after=1"} {
			path := "/jobs?" + q + "&finished=" + finished
			status, body := e.get(path)
			if status != http.StatusBadRequest || !strings.Contains(body, "finished is a cursor of a list ordered by finish time") {
				t.Errorf("GET %s = %d, want 400 saying where finished applies:\n%s", path, status, body)
			}
		}
		for _, first := range []string{"/jobs?state=completed", "/jobs?state=completed&order=oldest"} {
			next := nextLink(t, e.mustGet(first))
			if !strings.Contains(next, "finished=") {
				t.Fatalf("%s: next link %q carries no finish time", first, next)
			}
			if status, body := e.get(next); status != http.StatusOK {
				t.Errorf("%s: its next link %s = %d:\n%s", first, next, status, body)
			}
		}
	})
}
