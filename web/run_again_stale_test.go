package web_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRunAgainFromStalePage: operator A loads a completed job's page;
// operator B runs it again from the same page, and it completes a second
// time; A's "Run again", posted from the page loaded before, is refused
// (409, the page says the job ran again since it was loaded) and the job
// is left completed at its second attempt, not run a third time. The
// accepted "Run again" is logged with completed=true. A bulk confirmation
// shown before the job ran again is refused the same way.
func TestRunAgainFromStalePage(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		var logs lockedBuffer
		e := newEnv(t, d, web.Options{Token: testToken, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		e.login()
		j := e.ended("stale", leasehold.OutcomeCompleted)
		path := "/jobs/" + strconv.FormatInt(j.ID, 10)
		pageA := e.mustGet(path)
		if !strings.Contains(pageA, `<input type="hidden" name="attempt" value="1">`) {
			t.Fatalf("the Run again form does not carry the attempt shown:\n%s", pageA)
		}
		formA := formOf(pageA)
		formA.Set("completed", "1")
		bulkPage := e.mustGet("/bulk?action=retry&queue=stale")
		bulkForm := formOf(bulkPage)
		bulkForm.Set("completed", "1")

		formB := formOf(e.mustGet(path))
		formB.Set("completed", "1")
		if status, body := e.post(path+"/retry", formB); status != http.StatusSeeOther {
			t.Fatalf("Run again = %d:\n%s", status, body)
		}
		if !strings.Contains(logs.String(), "action=retry job="+strconv.FormatInt(j.ID, 10)+" completed=true") {
			t.Errorf("the Run again is not logged with completed=true:\n%s", logs.String())
		}
		again := e.claim(j.ID, "w", time.Minute, false)
		if !e.finish(again, leasehold.OutcomeCompleted, "") {
			t.Fatal("Finish refused")
		}

		status, body := e.post(path+"/retry", formA)
		if status != http.StatusConflict || !strings.Contains(body, "ran again since this page was loaded") {
			t.Errorf("Run again from the page loaded before = %d, want 409 saying it ran again since:\n%s", status, body)
		}
		status, body = e.post("/bulk", bulkForm)
		if status != http.StatusOK || !strings.Contains(body, "retry: 0 job(s) done, 1 refused") {
			t.Errorf("bulk Run again confirmed before the job ran again = %d:\n%s", status, body)
		}
		got, err := e.d.GetJob(t.Context(), j.ID)
		if err != nil {
			t.Fatalf("GetJob: %v", err)
		}
		if got.State != leasehold.StateCompleted || got.Attempt != 2 {
			t.Errorf("job after the stale Run again: %s at attempt %d, want completed at attempt 2", got.State, got.Attempt)
		}
	})
}
