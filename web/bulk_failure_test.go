package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testlog"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/web"
)

// bulkFailureRE matches the line a bulk action's page shows for the job
// it failed on with a server error, and the error id.
var bulkFailureRE = regexp.MustCompile(`job (\d+): failed \(error ([0-9a-f]{8}); see the server&#39;s log\)`)

// triggerText is the error a test trigger raises; it names the jobs table,
// as a driver's error names a table, a host or a file.
const triggerText = "leasehold_jobs row refused by the test trigger"

// failUpdatesOf makes every update of job id on d's database fail with a
// server error (a trigger raising triggerText).
func failUpdatesOf(t *testing.T, d driver.Driver, id int64) {
	t.Helper()
	n := strconv.FormatInt(id, 10)
	if _, ok := d.(*pgdriver.Driver); ok {
		execSQL(t, d, `CREATE FUNCTION leasehold_test_refuse() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION '`+triggerText+`'; END $$`)
		execSQL(t, d, `CREATE TRIGGER leasehold_test_refuse BEFORE UPDATE ON leasehold_jobs
FOR EACH ROW WHEN (OLD.id = `+n+`) EXECUTE FUNCTION leasehold_test_refuse()`)
		return
	}
	execSQL(t, d, `CREATE TRIGGER leasehold_test_refuse BEFORE UPDATE ON leasehold_jobs
WHEN OLD.id = `+n+` BEGIN SELECT RAISE(ABORT, '`+triggerText+`'); END`)
}

// TestBulkStopsAtServerError: a bulk action goes on past a job whose state
// refuses it, but stops at the first job that fails with a server error:
// it answers 500, as the same action on that one job would, says what was
// done before and how many jobs were not tried, and names the failure by
// an error id only, under which the log has the driver's error.
func TestBulkStopsAtServerError(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		var log testlog.Buffer
		e := newEnv(t, d, web.Options{Token: testToken, Logger: log.Logger()})
		e.login()
		finished := e.ended("q", leasehold.OutcomeCompleted)
		before, failing, after := e.insert("q", "k", `{}`), e.insert("q", "k", `{}`), e.insert("q", "k", `{}`)
		failUpdatesOf(t, d, failing.ID)
		form := url.Values{"csrf": {e.csrf("/jobs")}, "action": {"cancel"}}
		for _, id := range []int64{finished.ID, before.ID, failing.ID, after.ID} {
			form.Add("id", strconv.FormatInt(id, 10))
		}
		status, body := e.post("/bulk", form)
		if status != http.StatusInternalServerError || strings.Contains(body, "leasehold_jobs") {
			t.Fatalf("bulk cancel failing on job %d = %d, want 500 without the driver's error:\n%s", failing.ID, status, body)
		}
		if !strings.Contains(body, "cancel: 1 job(s) done, 1 refused; stopped by a failure, 1 job(s) not tried.") ||
			!strings.Contains(body, "job "+strconv.FormatInt(finished.ID, 10)+": job already finished") {
			t.Errorf("the page does not say what was done, refused and left untried:\n%s", body)
		}
		m := bulkFailureRE.FindStringSubmatch(body)
		if m == nil || m[1] != strconv.FormatInt(failing.ID, 10) {
			t.Fatalf("the page names no failure of job %d with an error id:\n%s", failing.ID, body)
		}
		if line := logLine(log.String(), "error_id="+m[2]); !strings.Contains(line, triggerText) {
			t.Errorf("the log has no error %q with id %s:\n%s", triggerText, m[2], log.String())
		}
		for id, want := range map[int64]leasehold.JobState{finished.ID: leasehold.StateCompleted,
			before.ID: leasehold.StateCancelled, failing.ID: leasehold.StatePending, after.ID: leasehold.StatePending} {
			if got := e.state(id); got != want {
				t.Errorf("job %d after the bulk cancel: %s, want %s", id, got, want)
			}
		}
	})
}

// TestBulkOnMissingTableShowsNoDriverError: with the jobs table gone
// (the driver's error names it), a bulk action shows an error id, not
// the error, and answers 500.
func TestBulkOnMissingTableShowsNoDriverError(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		var log testlog.Buffer
		e := newEnv(t, d, web.Options{Token: testToken, Logger: log.Logger()})
		e.login()
		j := e.insert("q", "k", `{}`)
		csrf := e.csrf("/jobs")
		execSQL(t, d, `ALTER TABLE leasehold_jobs RENAME TO leasehold_jobs_gone`)
		status, body := e.post("/bulk", url.Values{"csrf": {csrf}, "action": {"retry"}, "id": {strconv.FormatInt(j.ID, 10)}})
		m := bulkFailureRE.FindStringSubmatch(body)
		if status != http.StatusInternalServerError || m == nil || strings.Contains(body, "leasehold_jobs") {
			t.Fatalf("bulk retry with the table renamed = %d, want 500 naming an error id, not the error:\n%s", status, body)
		}
		if line := logLine(log.String(), "error_id="+m[2]); !strings.Contains(line, "leasehold_jobs") {
			t.Errorf("the log has no error naming the table with id %s:\n%s", m[2], log.String())
		}
	})
}
