package web_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
		for _, id := range purged {
			if _, err := e.client.CancelJob(t.Context(), id); err != nil {
				t.Fatalf("CancelJob %d: %v", id, err)
			}
		}
		purge(t, e, len(purged))
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
		e := newEnv(t, d, web.Options{BasicUser: "ops", BasicPassword: "pw"})
		e.http.Transport = basicAuth{"ops", "pw"}
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
	})
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

// purge deletes the n finished jobs of e with PurgeFinished, as retention
// does; it asks again while the last of them finished too recently to be
// older than its bound.
func purge(t *testing.T, e *env, n int) {
	t.Helper()
	var done int64
	for deadline := time.Now().Add(5 * time.Second); done < int64(n) && time.Now().Before(deadline); {
		got, err := e.client.PurgeFinished(t.Context(), 0)
		if err != nil {
			t.Fatalf("PurgeFinished: %v", err)
		}
		done += got
		time.Sleep(time.Millisecond)
	}
	if done != int64(n) {
		t.Fatalf("PurgeFinished deleted %d jobs, want %d", done, n)
	}
}
