package web_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// snoozes makes a job with n attempts, each claimed and snoozed (not
// charged to its budget, as a poller's are), attempt i with error text
// errText(i).
func (e *env) snoozes(n int, errText func(i int) string) *leasehold.JobRow {
	e.t.Helper()
	j := e.insert("polls", "payment.status", `{"payment_id":"p-1"}`)
	for i := 1; i <= n; i++ {
		if !e.finish(e.claim(j.ID, "poller", time.Minute, false), leasehold.OutcomeSnoozed, errText(i)) {
			e.t.Fatalf("snooze %d of job %d refused", i, j.ID)
		}
	}
	return j
}

// attemptsShown returns the attempt numbers of the timeline's bars and
// the number of rows of the history table of the job page body.
func attemptsShown(t *testing.T, body string) (bars []int, rows int) {
	t.Helper()
	for _, m := range barRE.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[1])
		bars = append(bars, n)
	}
	i := strings.Index(body, `id="attempts"`)
	if i < 0 {
		t.Fatalf("no history table:\n%s", body)
	}
	table := body[i:]
	table = table[:strings.Index(table, "</table>")]
	return bars, strings.Count(table, `<tr class="outcome-`)
}

var barRE = regexp.MustCompile(`<g class="attempt [^"]*" data-attempt="(\d+)">`)

// TestJobPageShowsLatestAttempts: the page of a job with more attempts
// than it shows has the latest web.MaxShownAttempts of them in its
// timeline and its table, says which earlier ones it leaves out and where
// to see them, and cuts the error in a bar's tooltip, not in the table; a
// job with few attempts shows them all, with no such note.
func TestJobPageShowsLatestAttempts(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		n, total := web.MaxShownAttempts, web.MaxShownAttempts+37
		long := strings.Repeat("x", 300) + "END-OF-ERROR"
		j := e.snoozes(total, func(i int) string {
			if i == total {
				return long
			}
			return fmt.Sprintf("not settled yet %d", i)
		})
		body := e.mustGet("/jobs/" + strconv.FormatInt(j.ID, 10))
		bars, rows := attemptsShown(t, body)
		if len(bars) != n || rows != n {
			t.Fatalf("%d bars and %d rows, want %d of each", len(bars), rows, n)
		}
		if bars[0] != total-n+1 || bars[n-1] != total {
			t.Errorf("bars for attempts %d to %d, want %d to %d", bars[0], bars[n-1], total-n+1, total)
		}
		note := fmt.Sprintf("Attempts 1–%d (%d of %d) are not shown: this page shows the latest %d.", total-n, total-n, total, n)
		if !strings.Contains(body, note) || !strings.Contains(body, "<code>leasehold jobs show "+strconv.FormatInt(j.ID, 10)+"</code> lists them all") {
			t.Errorf("no note %q:\n%s", note, body)
		}
		if strings.Contains(body, "not settled yet 1<") || strings.Contains(body, fmt.Sprintf("not settled yet %d<", total-n)) {
			t.Errorf("the page shows an error of an attempt it leaves out")
		}
		tip := " · " + long[:200] + "…</title>"
		if !strings.Contains(body, tip) || strings.Count(body, "END-OF-ERROR") != 1 || !strings.Contains(body, `<td class="err">`+long+`</td>`) {
			t.Errorf("the tooltip should cut the error to 200 characters, the table show it whole")
		}

		few := e.snoozes(3, func(i int) string { return "not settled yet" })
		body = e.mustGet("/jobs/" + strconv.FormatInt(few.ID, 10))
		bars, rows = attemptsShown(t, body)
		if len(bars) != 3 || rows != 3 || bars[0] != 1 || bars[2] != 3 {
			t.Errorf("bars %v and %d rows, want attempts 1 to 3", bars, rows)
		}
		if strings.Contains(body, "attempts-earlier") || strings.Contains(body, "not shown") {
			t.Errorf("a job with 3 attempts has a note on attempts not shown:\n%s", body)
		}
	})
}
