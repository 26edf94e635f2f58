package web_test

import (
	"fmt"
	"html"
	"regexp"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// unclaimedLinkRE matches the link of a kind nobody claims.
var unclaimedLinkRE = regexp.MustCompile(`<td><a href="([^"]*)">orphan</a></td>`)

// TestAttentionUnclaimedOldestFirst: the link of a kind nobody claims
// lists its pending jobs oldest first, so that the due jobs the row
// counts, the oldest, are on the list's first page.
func TestAttentionUnclaimedOldestFirst(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{UnclaimedAfter: time.Nanosecond, PageSize: 2})
		var ids []int64
		for range 3 {
			ids = append(ids, e.insert("q", "orphan", `{}`).ID)
		}
		time.Sleep(10 * time.Millisecond) // due for longer than UnclaimedAfter
		m := unclaimedLinkRE.FindStringSubmatch(e.mustGet("/attention"))
		if m == nil {
			t.Fatalf("the attention page lists no kind nobody claims")
		}
		link := html.UnescapeString(m[1])
		if want := "/jobs?queue=q&kind=orphan&state=pending&order=oldest"; link != want {
			t.Errorf("the kind links to %s, want %s", link, want)
		}
		got := jobIDs(e.mustGet(link))
		if want := []string{fmt.Sprint(ids[0]), fmt.Sprint(ids[1])}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("the kind's link lists %v on its first page, want the oldest %v", got, want)
		}
	})
}
