package leaseholdprom_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
)

// testArgs are the jobs of the tests: Do says what the handler does.
type testArgs struct {
	Do string `json:"do"`
}

// Kind implements leasehold.Args.
func (testArgs) Kind() string { return "test.job" }

// handler does what a job's Do says: complete, retry (once), snooze
// (once), fail, cancel, or hold (the first attempt waits for its context
// to end, then claims success anyway: a late completion).
func handler(held chan<- struct{}) leasehold.WorkFunc[testArgs] {
	return func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		first := job.Attempt == 1
		switch job.Args.Do {
		case "retry":
			if first {
				return errors.New("try again")
			}
		case "snooze":
			if first {
				return leasehold.Snooze(time.Millisecond)
			}
		case "fail":
			return leasehold.Permanent(errors.New("no"))
		case "cancel":
			return leasehold.Cancel(errors.New("not wanted"))
		case "hold":
			if first {
				held <- struct{}{}
				<-ctx.Done()
			}
		}
		return nil
	}
}

// metricsClient returns metrics on a fresh registry and a client wired
// to them; the client is stopped and the metrics closed when t ends.
func metricsClient(t *testing.T, cfg leasehold.Config, opts leaseholdprom.Options) (*leasehold.Client, *prometheus.Registry, *leaseholdprom.Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	m, err := leaseholdprom.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg.InsertMiddleware = append(cfg.InsertMiddleware, m.InsertMiddleware())
	c, err := leasehold.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Attach(c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		m.Close()
	})
	return c, reg, m
}

// sample is one series as gathered: its labels and value (a histogram's
// sample count).
type sample struct {
	labels map[string]string
	value  float64
}

// gather returns the series of the named metric.
func gather(t *testing.T, g prometheus.Gatherer, name string) []sample {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		out := make([]sample, 0, len(mf.GetMetric()))
		for _, m := range mf.GetMetric() {
			out = append(out, sample{labels: labelMap(m), value: metricValue(m)})
		}
		return out
	}
	return nil
}

func labelMap(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// series formats samples as sorted `name{labels} value` lines, labels in
// the order given.
func series(samples []sample, labels ...string) string {
	lines := make([]string, 0, len(samples))
	for _, s := range samples {
		parts := make([]string, len(labels))
		for i, l := range labels {
			parts[i] = l + "=" + s.labels[l]
		}
		lines = append(lines, fmt.Sprintf("{%s} %g", strings.Join(parts, ","), s.value))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// valueOf returns the value of the series of name with exactly labels,
// and whether it exists.
func valueOf(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	for _, s := range gather(t, g, name) {
		if fmt.Sprint(s.labels) == fmt.Sprint(labels) {
			return s.value, true
		}
	}
	return 0, false
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
