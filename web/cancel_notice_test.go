package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// TestCancelNoticeSaysWhatHappened: after Cancel, the job page says the
// job was cancelled only when it is; a running job, still processing with
// its cancellation requested (its handler may yet complete it), is said
// to have its cancellation requested.
func TestCancelNoticeSaysWhatHappened(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		cancel := func(id int64) string {
			t.Helper()
			path := "/jobs/" + strconv.FormatInt(id, 10)
			if status, body := e.post(path+"/cancel", url.Values{"csrf": {e.csrf(path)}}); status != http.StatusSeeOther {
				t.Fatalf("cancel of job %d = %d:\n%s", id, status, body)
			}
			return e.mustGet(path + "?done=cancel")
		}

		pending := e.insert("q", "k", `{}`)
		body := cancel(pending.ID)
		if e.state(pending.ID) != leasehold.StateCancelled || !strings.Contains(body, "The job was cancelled.") ||
			strings.Contains(body, "Cancellation requested") {
			t.Errorf("cancel of a pending job (now %s): the page does not say it was cancelled:\n%s", e.state(pending.ID), body)
		}

		running := e.insert("q", "k", `{}`)
		e.claim(running.ID, "w", time.Hour, false)
		body = cancel(running.ID)
		if e.state(running.ID) != leasehold.StateProcessing {
			t.Fatalf("a cancelled running job is %s, want still processing", e.state(running.ID))
		}
		if strings.Contains(body, "was cancelled") || !strings.Contains(body, "Cancellation requested: the job is still processing.") {
			t.Errorf("cancel of a running job: the page says:\n%s", body)
		}
	})
}
