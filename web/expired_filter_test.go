package web_test

import (
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// seeAllRE matches the attention page's links to a whole list.
var seeAllRE = regexp.MustCompile(`<a href="([^"]*)">see them all</a>`)

// TestAttentionSeeAllExpired: with more expired leases than the attention
// page lists, its "see them all" link lists every expired lease, on every
// page of the jobs list, and no live lease; the filter shows on the page
// and in its links. An unknown value of the filter is refused.
func TestAttentionSeeAllExpired(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{PageSize: 90})
		ctx := t.Context()
		insert := func(queue string, n int) {
			batch := make([]leasehold.InsertManyParams, n)
			for i := range batch {
				batch[i] = leasehold.InsertManyParams{Args: leasehold.RawArgs{KindName: "k", JSON: json.RawMessage(`{}`)},
					Opts: &leasehold.InsertOpts{Queue: queue}}
			}
			if _, err := e.client.InsertMany(ctx, nil, batch); err != nil {
				t.Fatalf("InsertMany: %v", err)
			}
		}
		// Live leases among the expired ones, by id.
		insert("dead", 110)
		insert("live", 3)
		insert("dead", 100)
		insert("live", 2)
		claim := func(queue, owner string, ttl time.Duration) []*leasehold.JobRow {
			jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: queue, Kinds: []string{"k"}, Owner: owner, TTL: ttl, Limit: 500})
			if err != nil {
				t.Fatalf("Claim(%s): %v", queue, err)
			}
			return jobs
		}
		dead := claim("dead", "gone", 100*time.Millisecond)
		live := claim("live", "alive", time.Hour)
		if len(dead) != 210 || len(live) != 5 {
			t.Fatalf("claimed %d dead and %d live jobs, want 210 and 5", len(dead), len(live))
		}
		time.Sleep(300 * time.Millisecond)

		m := seeAllRE.FindStringSubmatch(e.mustGet("/attention"))
		if m == nil {
			t.Fatalf("the attention page has no link to all the expired leases")
		}
		link := html.UnescapeString(m[1])
		var listed []int64
		for page := link; page != ""; {
			body := e.mustGet(page)
			if !strings.Contains(body, `id="expired-only"`) || !strings.Contains(body, `name="expired" value="1" id="expired" checked`) {
				t.Errorf("page %s does not show the expired filter", page)
			}
			for _, id := range jobIDs(body) {
				n, _ := strconv.ParseInt(id, 10, 64)
				listed = append(listed, n)
			}
			page = nextLink(t, body)
		}
		for _, j := range live {
			if slices.Contains(listed, j.ID) {
				t.Errorf("%s lists job %d, whose lease is live", link, j.ID)
			}
		}
		if len(listed) != len(dead) {
			t.Errorf("%s lists %d jobs over its pages, want the %d expired leases", link, len(listed), len(dead))
		}
		if status, _ := e.get("/jobs?expired=yes"); status != http.StatusBadRequest {
			t.Errorf("/jobs?expired=yes = %d, want 400", status)
		}
	})
}
