package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testlog"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/sqlitedriver"
	"github.com/leasehold/leasehold/web"
)

// errorIDRE matches the message of a server error's page and its id.
var errorIDRE = regexp.MustCompile(`the request failed \(error ([0-9a-f]{8})\); the server&#39;s log has the details`)

// TestServerErrorShowsAnIDOnly: a request that fails with a 500 (here a
// read of the jobs table, renamed away, so that the driver's error names
// the table, as others name a host, a user or a file) shows a random
// error id instead of the error's text, and logs the error with that id;
// each failure gets an id of its own.
func TestServerErrorShowsAnIDOnly(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		var log testlog.Buffer
		e := newEnv(t, d, web.Options{Logger: log.Logger()})
		execSQL(t, d, `ALTER TABLE leasehold_jobs RENAME TO leasehold_jobs_gone`)
		if _, err := e.client.ListJobs(t.Context(), &leasehold.ListParams{Limit: 1}); err == nil ||
			!strings.Contains(err.Error(), "leasehold_jobs") {
			t.Fatalf("ListJobs with the table renamed: %v, want an error naming it", err)
		}
		var ids []string
		for range 2 {
			status, body := e.get("/jobs")
			m := errorIDRE.FindStringSubmatch(body)
			if status != http.StatusInternalServerError || m == nil || strings.Contains(body, "leasehold_jobs") {
				t.Fatalf("GET /jobs with the table renamed = %d, want 500 naming an error id, not the error:\n%s", status, body)
			}
			if line := logLine(log.String(), "error_id="+m[1]); !strings.Contains(line, "leasehold_jobs") {
				t.Errorf("the log has no error naming the table with id %s:\n%s", m[1], log.String())
			}
			ids = append(ids, m[1])
		}
		if ids[0] == ids[1] {
			t.Errorf("two failures have the same error id %s", ids[0])
		}
	})
}

// logLine returns the first line of log that holds s, "" when none does.
func logLine(log, s string) string {
	for line := range strings.Lines(log) {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// execSQL runs the statement stmt on d's database.
func execSQL(t *testing.T, d driver.Driver, stmt string) {
	t.Helper()
	var err error
	switch d := d.(type) {
	case *sqlitedriver.Driver:
		_, err = d.DB().ExecContext(t.Context(), stmt)
	case *pgdriver.Driver:
		_, err = d.Pool().Exec(t.Context(), stmt)
	default:
		t.Fatalf("execSQL: driver %T", d)
	}
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}
