package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/internal/testdb"
)

// metricsURL finds the address a worker serves its metrics at in its log.
var metricsURL = regexp.MustCompile(`msg="serving metrics" url=(http://\S+/metrics)`)

// TestWorkMetrics: `work --metrics-addr` with port 0 logs the address it
// chose and serves Prometheus metrics there while it runs: the jobs it
// ran, its queues, and the Go runtime's.
func TestWorkMetrics(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		w := start(t, db, "work", "--kind", "leasehold.sleep", "--metrics-addr", "127.0.0.1:0", "--poll-interval", "50ms")
		var url string
		waitFor(t, time.Minute, "the metrics URL in the log", func() bool {
			m := metricsURL.FindStringSubmatch(w.stderr.String())
			if m != nil {
				url = m[1]
			}
			return m != nil
		})
		enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1ms"}`)
		enqueueID(t, db, "leasehold.sleep", "--run-at", "1h") // pending: the queue gauges show it
		want := []string{
			`leasehold_jobs_finished_total{kind="leasehold.sleep",outcome="completed",queue="default"} 1`,
			`leasehold_jobs_claimed_total{kind="leasehold.sleep",queue="default"} 1`,
			`leasehold_queue_jobs{queue="default",state="pending"} 1`,
			"leasehold_jobs_running 0",
			"go_goroutines ",
		}
		// The queue gauges are a reading of the database that scrapes
		// reuse for a while: one taken before the first job finished
		// counts it pending, so wait for a fresh one too.
		var body string
		waitFor(t, time.Minute, "the completed job and the pending one in the metrics", func() bool {
			body = scrape(t, url)
			return strings.Contains(body, want[0]) && strings.Contains(body, "\n"+want[2])
		})
		for _, line := range want[1:] {
			if !strings.Contains(body, "\n"+line) {
				t.Errorf("metrics lack %q:\n%s", line, body)
			}
		}
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := w.wait(t); err != nil {
			t.Fatalf("worker stopped by SIGTERM: %v\n%s", err, w.stderr.String())
		}
		if _, err := http.Get(url); err == nil {
			t.Error("metrics still served after the worker stopped")
		}
	})
}

// TestWorkMetricsQueueStatsOff: `work --metrics-addr --queue-stats-interval
// 0` serves the job counters and the runtime's, but neither reads nor
// exports the queue gauges, which one process of a fleet is enough to
// read.
func TestWorkMetricsQueueStatsOff(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		w := start(t, db, "work", "--kind", "leasehold.sleep", "--metrics-addr", "127.0.0.1:0", "--poll-interval", "50ms",
			"--queue-stats-interval", "0")
		url := waitMetricsURL(t, w)
		enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1ms"}`)
		enqueueID(t, db, "leasehold.sleep", "--run-at", "1h") // pending: the queue gauges would show it
		done := `leasehold_jobs_finished_total{kind="leasehold.sleep",outcome="completed",queue="default"} 1`
		var body string
		waitFor(t, time.Minute, "the completed job in the metrics", func() bool {
			body = scrape(t, url)
			return strings.Contains(body, done)
		})
		for _, gauge := range []string{"leasehold_queue_jobs", "leasehold_queue_oldest_due_seconds"} {
			if strings.Contains(body, "\n"+gauge+"{") {
				t.Errorf("%s exported with --queue-stats-interval 0:\n%s", gauge, body)
			}
		}
		if !strings.Contains(body, "\nleasehold_jobs_running 0") {
			t.Errorf("metrics lack leasehold_jobs_running:\n%s", body)
		}
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := w.wait(t); err != nil {
			t.Fatalf("worker stopped by SIGTERM: %v\n%s", err, w.stderr.String())
		}
	})
}

// TestWorkMetricsQueueStatsIntervalRefused: a negative, too short or
// unused --queue-stats-interval is a usage error, as for the other
// duration flags.
func TestWorkMetricsQueueStatsIntervalRefused(t *testing.T) {
	db := "sqlite:" + testdb.SQLitePath(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"negative", []string{"--metrics-addr", "127.0.0.1:0", "--queue-stats-interval", "-1s"}, "negative duration -1s"},
		{"too short", []string{"--metrics-addr", "127.0.0.1:0", "--queue-stats-interval", "500ms"}, "--queue-stats-interval 500ms is too short (minimum 1s, or 0 for none)"},
		{"without metrics", []string{"--queue-stats-interval", "1m"}, "--queue-stats-interval needs --metrics-addr"},
	} {
		checkOneLineError(t, c.name, lh(t, db, append([]string{"work"}, c.args...)...), cli.ExitUsage, c.want)
	}
}

// waitMetricsURL returns the URL of the metrics w logs that it serves.
func waitMetricsURL(t *testing.T, w *background) string {
	t.Helper()
	var url string
	waitFor(t, time.Minute, "the metrics URL in the log", func() bool {
		if m := metricsURL.FindStringSubmatch(w.stderr.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	return url
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v\n%s", url, resp.Status, err, b)
	}
	return string(b)
}
