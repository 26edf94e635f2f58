package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// envScreenshots names a directory the browser test saves its screenshots
// in (docs/screenshots for the README's); unset, it saves none.
const envScreenshots = "LEASEHOLD_SCREENSHOTS"

// browserToken is the dashboard's token in the browser test.
const browserToken = "browser-test-token"

// chromiumPath returns the system Chromium. It skips the test when there
// is none, and fails it in CI (CI=true), whose runner installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: CI must install it (apt-get install chromium; .ci/run does)")
	}
	t.Skip("no chromium on PATH: skipping the browser test (apt-get install chromium to run it)")
	return ""
}

// browser is a headless Chromium tab that records console errors.
type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// browserStarts is how many times newBrowser starts Chromium before it
// gives up. Under a loaded test run, Chromium has once exited before its
// first answer, printing nothing of why; a browser that starts on a later
// try tests the dashboard just as well.
const browserStarts = 3

// newBrowser starts the system Chromium, closed when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath(t)
	for try := 1; ; try++ {
		ctx, stop, err := startChromium(path)
		if err == nil {
			t.Cleanup(stop)
			return watchConsole(ctx)
		}
		stop()
		if try == browserStarts {
			t.Fatalf("start chromium (%d tries): %v", try, err)
		}
		t.Logf("start chromium, try %d of %d: %v", try, browserStarts, err)
		time.Sleep(time.Second)
	}
}

// startChromium starts a headless Chromium at path with a blank tab.
// stop closes it, and must be called whatever the error.
func startChromium(path string) (ctx context.Context, stop func(), err error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	stop = func() { cancelTimeout(); cancel(); cancelAlloc() }
	return ctx, stop, chromedp.Do(ctx, chromedp.Navigate("about:blank"))
}

// watchConsole records the console errors and exceptions of the tab in
// ctx.
func watchConsole(ctx context.Context) *browser {
	b := &browser{ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errors = append(b.errors, fmt.Sprintf("%s: %s", m.URL, m.Text))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// do runs actions, failing the test on an error.
func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitURL waits until the tab has loaded a page whose URL holds part.
func (b *browser) waitURL(t *testing.T, part string) {
	t.Helper()
	for range 200 {
		loc, err := chromedp.Run(b.ctx, chromedp.Evaluate[string]("document.readyState === 'complete' ? location.href : ''"))
		if err == nil && strings.Contains(loc, part) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("no page with %q in its URL loaded", part)
}

// count returns how many elements match the CSS selector sel.
func (b *browser) count(t *testing.T, sel string) int {
	t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

// texts returns the text of every element matching sel.
func (b *browser) texts(t *testing.T, sel string) []string {
	t.Helper()
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](
		fmt.Sprintf("Array.from(document.querySelectorAll(%q), e => e.textContent.trim())", sel)))
	if err != nil {
		t.Fatalf("texts %s: %v", sel, err)
	}
	return out
}

// consoleErrors returns the console errors so far and forgets them.
func (b *browser) consoleErrors() []string {
	time.Sleep(100 * time.Millisecond) // let the last page's messages arrive
	b.mu.Lock()
	defer b.mu.Unlock()
	errs := b.errors
	b.errors = nil
	return errs
}

// screenshot saves the whole page as name.png in $LEASEHOLD_SCREENSHOTS.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)) // quality 100 makes a PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatalf("save screenshot: %v", err)
	}
}

// TestBrowser drives the system Chromium against `leasehold serve` on a
// real database: every page loads without a console error (the strict
// Content-Security-Policy included), the filters narrow the list, a cancel
// round-trips to the database, and the lease timeline of a job that was
// taken over shows the expired lease, the fence and the takeover.
func TestBrowser(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		b := newBrowser(t)
		s := seed(t, db)
		srv := startServe(t, db, []string{envWebToken + "=" + browserToken})
		t.Cleanup(func() { srv.stop(t) })
		shots := strings.HasSuffix(t.Name(), "sqlite")

		b.do(t, "log in", chromedp.Navigate(srv.url), chromedp.WaitVisible(`input[name=token]`),
			chromedp.SendKeys(`input[name=token]`, browserToken), chromedp.Submit(`input[name=token]`),
			chromedp.WaitVisible(`table.grid`))
		pages := []struct{ name, path, sel string }{
			{"overview", "", `table.grid`},
			{"jobs", "jobs", `#jobs`},
			{"workers", "workers", `#workers`},
			{"attention", "attention", `h2`},
			{"job-takeover", "jobs/" + strconv.FormatInt(s.takenOver, 10), `#timeline`},
			{"bulk-confirm", "bulk?action=retry&queue=default&state=failed", `#count`},
		}
		for _, p := range pages {
			b.do(t, "open "+p.name, chromedp.Navigate(srv.url+p.path), chromedp.WaitVisible(p.sel))
			if errs := b.consoleErrors(); len(errs) > 0 {
				t.Errorf("%s: console errors: %v", p.name, errs)
			}
			if shots {
				b.screenshot(t, p.name)
			}
		}

		// The lease timeline of the job taken over.
		b.do(t, "open the job", chromedp.Navigate(srv.url+"jobs/"+strconv.FormatInt(s.takenOver, 10)), chromedp.WaitVisible(`#timeline`))
		for sel, want := range map[string]int{
			`#timeline g.attempt`: 2, `#timeline g.outcome-lease_expired .unrenewed`: 1, `#timeline .fence`: 1,
			`#timeline .takeover`: 1, `#timeline g.outcome-completed`: 1, `#attempts .takenover`: 1,
		} {
			if got := b.count(t, sel); got != want {
				t.Errorf("timeline: %d of %s, want %d", got, sel, want)
			}
		}

		// Filters narrow the list.
		b.do(t, "open jobs", chromedp.Navigate(srv.url+"jobs"), chromedp.WaitVisible(`#jobs`))
		all := b.count(t, `#jobs tbody tr`)
		b.do(t, "filter by queue", chromedp.SendKeys(`input[name=queue]`, "payments"), chromedp.Click(`form.filters button`))
		b.waitURL(t, "queue=payments")
		queues := b.texts(t, `#jobs tbody td:nth-child(2)`)
		if len(queues) == 0 || len(queues) >= all {
			t.Errorf("the queue filter kept %d of %d jobs", len(queues), all)
		}
		for _, q := range queues {
			if q != "payments" {
				t.Errorf("the queue filter kept a job of queue %q", q)
			}
		}
		b.do(t, "filter by state", chromedp.Click(`input[name=state][value=processing]`), chromedp.Click(`form.filters button`))
		b.waitURL(t, "state=processing")
		if got := b.texts(t, `#jobs tbody .state`); len(got) != s.processing {
			t.Errorf("payments, processing: %v, want %d jobs", got, s.processing)
		}

		// An action round-trips.
		b.do(t, "cancel a job", chromedp.Navigate(srv.url+"jobs/"+strconv.FormatInt(s.pending, 10)),
			chromedp.WaitVisible(`#cancel`), chromedp.Click(`#cancel`), chromedp.WaitVisible(`p.notice`))
		if errs := b.consoleErrors(); len(errs) > 0 {
			t.Errorf("cancel: console errors: %v", errs)
		}
		if j := showJob(t, db, s.pending); j.Status != "cancelled" {
			t.Errorf("after the browser's cancel the job is %s, want cancelled", j.Status)
		}
		b.checkRetryCompleted(t, srv.url, db, s.takenOver)
	})
}

// checkRetryCompleted checks that the page of completed job id does not
// send its retry until its box is ticked, and sends it then.
func (b *browser) checkRetryCompleted(t *testing.T, base, db string, id int64) {
	t.Helper()
	b.do(t, "open the completed job", chromedp.Navigate(base+"jobs/"+strconv.FormatInt(id, 10)),
		chromedp.WaitVisible(`#retry-completed`))
	valid, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.querySelector('#retry').form.checkValidity()`))
	if err != nil || valid {
		t.Errorf("the retry form of a completed job is valid with its box unticked (%v)", err)
	}
	b.do(t, "run again, box unticked", chromedp.Click(`#retry`))
	if j := showJob(t, db, id); j.Status != "completed" {
		t.Errorf("the unticked retry form was sent: the job is %s", j.Status)
	}
	b.do(t, "run again, box ticked", chromedp.Click(`#retry-completed`), chromedp.Click(`#retry`),
		chromedp.WaitVisible(`p.notice`))
	if j := showJob(t, db, id); j.Status != "pending" {
		t.Errorf("after the ticked retry the job is %s, want pending", j.Status)
	}
}

// seeded names the jobs seed made.
type seeded struct {
	takenOver, pending int64
	// processing counts the processing jobs of queue payments.
	processing int
}

// seed fills db with jobs in every state: pending and finished mail, live
// and expired payment leases, failures with errors, and one job whose
// lease expired, was taken over and completed by the new owner, while the
// first owner's late completion was refused.
func seed(t *testing.T, db string) seeded {
	t.Helper()
	ctx := t.Context()
	h := openDB(t, db)
	c, err := leasehold.NewClient(leasehold.Config{Driver: h.Driver})
	if err != nil {
		t.Fatal(err)
	}
	d := h.Driver
	insert := func(queue, kind, args string) *leasehold.JobRow {
		res, err := c.Insert(ctx, leasehold.RawArgs{KindName: kind, JSON: json.RawMessage(args)}, &leasehold.InsertOpts{Queue: queue})
		if err != nil {
			t.Fatalf("insert: %v", err)
		}
		return res.Job
	}
	claim := func(id int64, owner string, ttl time.Duration, takeOver bool) *leasehold.JobRow {
		j, err := d.ClaimByID(ctx, &driver.ClaimByIDParams{ID: id, Owner: owner, TTL: ttl, TakeOver: takeOver})
		if err != nil || j == nil {
			t.Fatalf("claim %d: %v, %v", id, j, err)
		}
		return j
	}
	finish := func(j *leasehold.JobRow, o leasehold.Outcome, msg string) bool {
		ids, err := d.Finish(ctx, nil, []*driver.FinishParams{{ID: j.ID, Owner: j.LeaseOwner, Attempt: j.Attempt,
			Transition: statemachine.Finish(statemachine.Ending{Outcome: o, Error: msg})}})
		if err != nil {
			t.Fatalf("finish: %v", err)
		}
		return len(ids) == 1
	}
	var s seeded
	for i := range 8 {
		j := insert("default", "email.send", fmt.Sprintf(`{"to":"user%d@example.com","template":"receipt"}`, i))
		if i < 5 {
			finish(claim(j.ID, "web-1-3f9a", time.Minute, false), leasehold.OutcomeCompleted, "")
		}
	}
	for i := range 2 {
		j := insert("default", "email.send", fmt.Sprintf(`{"to":"bounce%d@example.com"}`, i))
		finish(claim(j.ID, "web-1-3f9a", time.Minute, false), leasehold.OutcomeFailed, "smtp: 550 mailbox unavailable")
	}
	s.pending = insert("default", "email.send", `{"to":"later@example.com"}`).ID
	for i := range 3 {
		j := insert("payments", "leasehold.demo.charge", fmt.Sprintf(`{"payment_id":"pay-%d","amount_cents":%d}`, i, 1200+i))
		claim(j.ID, []string{"pay-7-a1b2", "pay-7-a1b2", "pay-9-c3d4"}[i], 10*time.Minute, false)
		s.processing++
	}
	expired := insert("payments", "leasehold.demo.charge", `{"payment_id":"pay-x","amount_cents":990}`)
	claim(expired.ID, "pay-3-dead", 200*time.Millisecond, false)
	s.processing++

	j := insert("payments", "leasehold.demo.charge", `{"payment_id":"pay-42","amount_cents":4200}`)
	a := claim(j.ID, "pay-3-dead", 600*time.Millisecond, false)
	time.Sleep(300 * time.Millisecond)
	if hb, err := d.Heartbeat(ctx, &driver.HeartbeatParams{Owner: a.LeaseOwner, TTL: 600 * time.Millisecond,
		Leases: []driver.LeaseRef{{ID: a.ID, Attempt: a.Attempt}}}); err != nil || len(hb) != 1 {
		t.Fatalf("heartbeat: %v, %v", hb, err)
	}
	time.Sleep(900 * time.Millisecond)
	b := claim(j.ID, "pay-9-c3d4", time.Minute, true)
	if finish(a, leasehold.OutcomeCompleted, "") {
		t.Fatal("the first owner's late completion was accepted")
	}
	time.Sleep(400 * time.Millisecond)
	finish(b, leasehold.OutcomeCompleted, "")
	s.takenOver = j.ID
	// The finishing above went round the clients, which record the
	// per-minute totals: record what they would have, for the chart.
	counts := []leasehold.ThroughputCount{
		{Queue: "default", Outcome: leasehold.OutcomeCompleted, Jobs: 5},
		{Queue: "default", Outcome: leasehold.OutcomeFailed, Jobs: 2},
		{Queue: "payments", Outcome: leasehold.OutcomeCompleted, Jobs: 1},
	}
	if err := d.RecordThroughput(ctx, &driver.ThroughputParams{Counts: counts}); err != nil {
		t.Fatalf("record throughput: %v", err)
	}
	return s
}
