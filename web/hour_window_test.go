package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/web"
)

// recordHourAgo stores jobs completed attempts of queue for the minute
// that began an hour before the database clock's current minute: the
// oldest minute Client.Throughput returns for an hour, which the last
// hour's chart has no bar for.
func recordHourAgo(t *testing.T, d driver.Driver, queue string, jobs int64) {
	t.Helper()
	n := strconv.FormatInt(jobs, 10)
	if _, ok := d.(*pgdriver.Driver); ok {
		execSQL(t, d, `INSERT INTO leasehold_throughput (minute, queue, outcome, jobs)
VALUES (date_trunc('minute', now()) - interval '60 minutes', '`+queue+`', 'completed', `+n+`)`)
		return
	}
	now, err := d.Now(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m := now.Truncate(time.Minute).Add(-time.Hour).UnixMicro()
	execSQL(t, d, `INSERT INTO leasehold_throughput (minute, queue, outcome, jobs)
VALUES (`+strconv.FormatInt(m, 10)+`, '`+queue+`', 'completed', `+n+`)`)
}

// TestOverviewHourIsTheChartsHour: the overview's hour columns count the
// chart's 60 minutes: not the minute that began an hour ago, which gives
// a queue with nothing else no row either.
func TestOverviewHourIsTheChartsHour(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		recordHourAgo(t, d, "oldq", 7)
		if err := d.RecordThroughput(context.Background(), &driver.ThroughputParams{
			Counts: []leasehold.ThroughputCount{{Queue: "mail", Outcome: leasehold.OutcomeCompleted, Jobs: 1}},
		}); err != nil {
			t.Fatal(err)
		}
		body := e.mustGet("/")
		if !strings.Contains(body, `<span class="key-ok">1 completed</span>`) {
			t.Errorf("the chart does not count the current minute alone:\n%s", body)
		}
		i := strings.Index(body, "<tfoot>")
		if i < 0 || !strings.Contains(body[i:], `<th class="num hour">1</th><th class="num hour">0</th><th class="num hour">0</th>`) {
			t.Errorf("the overview's hour totals are not the chart's:\n%s", body)
		}
		if strings.Contains(body, "oldq") {
			t.Errorf("a queue with attempts only in the minute before the hour has a row:\n%s", body)
		}
	})
}
