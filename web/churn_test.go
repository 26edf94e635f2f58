package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/testlog"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/web"
)

// TestActionOnChurningJobIsConflict: on PostgreSQL an operator action
// whose conditional write keeps missing a job that changes state under it
// gives up with ErrJobChanging. The dashboard answers that with a 409
// naming it, a refusal to try again, not a 500, and logs no error. A
// trigger that turns every write of the jobs table into nothing makes the
// write miss every time.
func TestActionOnChurningJobIsConflict(t *testing.T) {
	d := pgtest.Open(t)
	var log testlog.Buffer
	e := newEnv(t, d, web.Options{Token: testToken, Logger: log.Logger()})
	e.login()
	cancelled, pending := e.insert("q", "k", `{}`).ID, e.insert("q", "k", `{}`).ID
	if _, err := e.client.CancelJob(t.Context(), cancelled); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE FUNCTION churn_skip() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
		`CREATE TRIGGER churn_skip BEFORE UPDATE OR DELETE ON leasehold_jobs FOR EACH ROW EXECUTE FUNCTION churn_skip()`,
	} {
		if _, err := d.Pool().Exec(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, tc := range []struct {
		action string
		id     int64
		want   leasehold.JobState
	}{
		{"retry", cancelled, leasehold.StateCancelled},
		{"cancel", pending, leasehold.StatePending},
		{"delete", cancelled, leasehold.StateCancelled},
	} {
		path := "/jobs/" + strconv.FormatInt(tc.id, 10)
		status, body := e.post(path+"/"+tc.action, url.Values{"csrf": {e.csrf(path)}})
		if status != http.StatusConflict || !strings.Contains(body, "keeps changing state") {
			t.Errorf("%s of a job whose writes keep missing = %d, want 409 saying it keeps changing state:\n%s", tc.action, status, body)
		}
		if got := e.state(tc.id); got != tc.want {
			t.Errorf("job %d after its refused %s: %s, want %s", tc.id, tc.action, got, tc.want)
		}
	}
	if strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("a refused action logged an error:\n%s", log.String())
	}
}
