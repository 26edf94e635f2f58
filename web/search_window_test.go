package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// insertArgs inserts n jobs of queue q with args, and returns their ids.
func (e *env) insertArgs(t *testing.T, n int, args string) []int64 {
	t.Helper()
	batch := make([]leasehold.InsertManyParams, n)
	for i := range batch {
		batch[i] = leasehold.InsertManyParams{Args: leasehold.RawArgs{KindName: "k", JSON: json.RawMessage(args)},
			Opts: &leasehold.InsertOpts{Queue: "q"}}
	}
	res, err := e.client.InsertMany(t.Context(), nil, batch)
	if err != nil {
		t.Fatalf("InsertMany: %v", err)
	}
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}

// TestSearchSkipsPurgedIDs: a search page starts at the first job that
// exists past its bound, so that ids retention or deletes emptied are not
// searched page after page: oldest first finds the match on the first
// page above a purged range, newest first on the page right after the
// newest window, below a purged range, and links on no further when no
// job is left below.
func TestSearchSkipsPurgedIDs(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		purged := e.insertArgs(t, 2100, `{"customer":"hay"}`)
		needle := e.insert("q", "k", `{"customer":"needle"}`)
		purged = append(purged, e.insertArgs(t, 2100, `{"customer":"hay"}`)...)
		e.insert("q", "k", `{"customer":"newest"}`)
		deleteJobs(t, d, purged)
		want := []string{strconv.FormatInt(needle.ID, 10)}
		up := e.mustGet("/jobs?search=needle&order=oldest")
		if ids := jobIDs(up); !slices.Equal(ids, want) {
			t.Errorf("oldest first, the first page lists %v, want the needle %v", ids, want)
		}
		first := e.mustGet("/jobs?search=needle")
		if ids := jobIDs(first); len(ids) != 0 {
			t.Fatalf("newest first, the first window lists %v, want no match", ids)
		}
		second := e.mustGet(nextLink(t, first))
		if ids := jobIDs(second); !slices.Equal(ids, want) {
			t.Errorf("newest first, the second page lists %v, want the needle %v", ids, want)
		}
		if from := "searched jobs 1 to " + want[0]; !strings.Contains(second, from) {
			t.Errorf("the second page does not say %q", from)
		}
		if next := nextLink(t, second); next != "" {
			t.Errorf("the page that reached the oldest job links on to %s", next)
		}
	})
}

// TestBulkSearchReadsOneWindow: the bulk confirmation of a search reads
// one window of ids, as a page of the list does, says which, and links to
// the next window's confirmation; the windows together list every match
// once.
func TestBulkSearchReadsOneWindow(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{BasicUser: "ops", BasicPassword: testPassword})
		e.http.Transport = basicAuth{"ops", testPassword}
		hay := e.insertArgs(t, 1200, `{"customer":"hay"}`)
		needles := e.insertArgs(t, 1300, `{"customer":"needle"}`)
		first := e.mustGet("/bulk?action=cancel&search=needle")
		lo := hay[0]
		window := "searched jobs " + strconv.FormatInt(lo, 10) + " to " + strconv.FormatInt(lo+1999, 10)
		if !strings.Contains(first, "<b>800</b> job(s)") || !strings.Contains(first, window) {
			t.Fatalf("the first confirmation does not cancel the 800 needles of %q:\n%s", window, first)
		}
		next := nextLink(t, first)
		if next == "" || !strings.Contains(next, "/bulk?") || !strings.Contains(next, "action=cancel") {
			t.Fatalf("the first confirmation links on to %q, want the next window's confirmation", next)
		}
		second := e.mustGet(next)
		if !strings.Contains(second, "<b>500</b> job(s)") {
			t.Fatalf("the second confirmation does not cancel the other 500 needles:\n%s", second)
		}
		if more := nextLink(t, second); more != "" {
			t.Errorf("the window that reached the newest job links on to %s", more)
		}
		listed := append(idsOf(t, first), idsOf(t, second)...)
		if !slices.Equal(listed, needles) {
			t.Errorf("the two confirmations list %d ids, want the %d needles once each", len(listed), len(needles))
		}
		e.confirmBulk(t, first, "cancel: 800 job(s) done")
		checkStates(t, e, needles[:800], leasehold.StateCancelled)
		checkStates(t, e, needles[800:], leasehold.StatePending)
	})
}

// TestBulkSearchCutNamesItsRange: a window holding more matches than a
// bulk action takes lists the first MaxBulk of them and names the ids up
// to the last one as its range; the next confirmation's range follows on
// from there, and confirming the first touches its jobs alone.
func TestBulkSearchCutNamesItsRange(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{BasicUser: "ops", BasicPassword: testPassword})
		e.http.Transport = basicAuth{"ops", testPassword}
		needles := e.insertArgs(t, web.MaxBulk+300, `{"customer":"needle"}`)
		newest := e.insertArgs(t, 800, `{"customer":"hay"}`)[799]
		first := e.mustGet("/bulk?action=cancel&search=needle")
		cut := needles[web.MaxBulk-1]
		if want := rangeText(needles[0], cut); !strings.Contains(first, want) {
			t.Errorf("the first confirmation does not say %q:\n%s", want, first)
		}
		second := e.mustGet(nextLink(t, first))
		if want := rangeText(cut+1, min(cut+searchIDs, newest)); !strings.Contains(second, want) {
			t.Errorf("the second confirmation does not say %q:\n%s", want, second)
		}
		if ids := idsOf(t, second); !slices.Equal(ids, needles[web.MaxBulk:]) {
			t.Errorf("the second confirmation lists %d ids, want the last 300 needles", len(ids))
		}
		e.confirmBulk(t, first, fmt.Sprintf("cancel: %d job(s) done", web.MaxBulk))
		checkStates(t, e, needles[:web.MaxBulk], leasehold.StateCancelled)
		checkStates(t, e, needles[web.MaxBulk:], leasehold.StatePending)
	})
}

// TestSearchPageCutNamesItsRange: a search page cut at its size names the
// ids up to its last job as what it searched, and the next page's range
// follows on from there.
func TestSearchPageCutNamesItsRange(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{PageSize: 2})
		needles := e.insertArgs(t, 3, `{"customer":"needle"}`)
		first := e.mustGet("/jobs?search=needle")
		if want := rangeText(needles[1], needles[2]); !strings.Contains(first, want) {
			t.Errorf("newest first, the first page does not say %q:\n%s", want, first)
		}
		up := e.mustGet("/jobs?search=needle&order=oldest")
		if want := rangeText(needles[0], needles[1]); !strings.Contains(up, want) {
			t.Errorf("oldest first, the first page does not say %q:\n%s", want, up)
		}
		if want := rangeText(needles[2], needles[2]); !strings.Contains(e.mustGet(nextLink(t, up)), want) {
			t.Errorf("oldest first, the second page does not say %q", want)
		}
	})
}

// searchIDs is how many ids a search window reads.
const searchIDs = 2000

// rangeText is how a page names the ids lo to hi it searched.
func rangeText(lo, hi int64) string {
	return fmt.Sprintf("searched jobs %d to %d", lo, hi)
}

// confirmBulk posts the form of the bulk confirmation body and checks
// that the result page says want.
func (e *env) confirmBulk(t *testing.T, body, want string) {
	t.Helper()
	status, done := e.post("/bulk", formOf(body))
	if status != http.StatusOK || !strings.Contains(done, want) {
		t.Fatalf("the confirmed bulk action = %d, want %q:\n%s", status, want, done)
	}
}

// checkStates checks that every job of ids is in state want.
func checkStates(t *testing.T, e *env, ids []int64, want leasehold.JobState) {
	t.Helper()
	for _, id := range ids {
		if got := e.state(id); got != want {
			t.Errorf("job %d is %s, want %s", id, got, want)
		}
	}
}

// idsOf returns the job ids a bulk confirmation's form posts.
func idsOf(t *testing.T, body string) []int64 {
	t.Helper()
	var ids []int64
	for _, s := range formOf(body)["id"] {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("form id %q: %v", s, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// deleteJobs deletes the jobs ids in one statement, as retention or a
// purge would have emptied their ids. Cancelling and purging each of
// thousands of jobs through the client would test nothing more here, and
// took most of the package's time on SQLite.
func deleteJobs(t *testing.T, d driver.Driver, ids []int64) {
	t.Helper()
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatInt(id, 10)
	}
	execSQL(t, d, "DELETE FROM leasehold_jobs WHERE id IN ("+strings.Join(list, ",")+")")
}

// TestSearchPagesListEveryMatchOnce: walked page by page, newest first
// and oldest first, a search lists every match once and in order, across
// pages cut at their size, windows with no match and purged ranges.
func TestSearchPagesListEveryMatchOnce(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{PageSize: 2})
		var needles, purged []int64
		for _, n := range []int{3, 1, 5, 2} {
			needles = append(needles, e.insertArgs(t, n, `{"customer":"needle"}`)...)
			purged = append(purged, e.insertArgs(t, 2100, `{"customer":"hay"}`)...)
			e.insertArgs(t, 2100, `{"customer":"hay"}`)
		}
		deleteJobs(t, d, purged)
		if got := walkSearch(t, e, "/jobs?search=needle&order=oldest"); !slices.Equal(got, needles) {
			t.Errorf("oldest first, the pages list %v, want %v", got, needles)
		}
		slices.Reverse(needles)
		if got := walkSearch(t, e, "/jobs?search=needle"); !slices.Equal(got, needles) {
			t.Errorf("newest first, the pages list %v, want %v", got, needles)
		}
	})
}

// walkSearch follows the pages of a search from path on and returns the
// ids they list, in order; it stops after 50 pages.
func walkSearch(t *testing.T, e *env, path string) []int64 {
	t.Helper()
	var ids []int64
	for pages := 0; path != "" && pages < 50; pages++ {
		body := e.mustGet(path)
		for _, s := range jobIDs(body) {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("job id %q: %v", s, err)
			}
			ids = append(ids, id)
		}
		path = nextLink(t, body)
	}
	return ids
}
