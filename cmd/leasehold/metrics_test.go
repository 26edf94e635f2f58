package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
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
