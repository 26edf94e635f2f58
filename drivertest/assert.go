package drivertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/leasehold/leasehold"
)

// timeIn reports an error unless got is set and within [lo, hi] (each
// widened by slack).
func (c *tc) timeIn(what string, got, lo, hi time.Time) {
	c.Helper()
	if got.IsZero() {
		c.Errorf("%s is zero, want within [%v, %v]", what, lo, hi)
		return
	}
	if got.Before(lo.Add(-slack)) || got.After(hi.Add(slack)) {
		c.Errorf("%s = %v, want within [%v, %v] (database clock; off by %v / %v)",
			what, got, lo, hi, got.Sub(lo), got.Sub(hi))
	}
}

// zeroTime reports an error unless got is the zero time.
func (c *tc) zeroTime(what string, got time.Time) {
	c.Helper()
	if !got.IsZero() {
		c.Errorf("%s = %v, want zero (NULL)", what, got)
	}
}

// sameTime reports an error unless got and want are the same instant
// (within slack).
func (c *tc) sameTime(what string, got, want time.Time) {
	c.Helper()
	if got.IsZero() != want.IsZero() || got.Sub(want).Abs() > slack {
		c.Errorf("%s = %v, want %v", what, got, want)
	}
}

// eq reports an error unless got equals want.
func (c *tc) eq(what string, got, want any) {
	c.Helper()
	if !reflect.DeepEqual(got, want) {
		c.Errorf("%s = %v, want %v", what, got, want)
	}
}

// sameJSON reports whether a and b encode the same JSON value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

// diffJob lists the fields in which got differs from want.
func diffJob(got, want *leasehold.JobRow) []string {
	var d []string
	add := func(name string, g, w any) { d = append(d, fmt.Sprintf("%s: got %v, want %v", name, g, w)) }
	if got.ID != want.ID {
		add("ID", got.ID, want.ID)
	}
	if got.Kind != want.Kind || got.Queue != want.Queue {
		add("Kind/Queue", got.Kind+"/"+got.Queue, want.Kind+"/"+want.Queue)
	}
	if got.State != want.State {
		add("State", got.State, want.State)
	}
	if got.Priority != want.Priority {
		add("Priority", got.Priority, want.Priority)
	}
	if got.Attempt != want.Attempt || got.MaxAttempts != want.MaxAttempts || got.FreeAttempts != want.FreeAttempts {
		add("Attempt/MaxAttempts/FreeAttempts",
			fmt.Sprint(got.Attempt, "/", got.MaxAttempts, "/", got.FreeAttempts),
			fmt.Sprint(want.Attempt, "/", want.MaxAttempts, "/", want.FreeAttempts))
	}
	if !sameJSON(got.Args, want.Args) {
		add("Args", string(got.Args), string(want.Args))
	}
	if !sameJSON(got.Metadata, want.Metadata) {
		add("Metadata", string(got.Metadata), string(want.Metadata))
	}
	if got.UniqueKey != want.UniqueKey {
		add("UniqueKey", got.UniqueKey, want.UniqueKey)
	}
	if got.UUID != want.UUID {
		add("UUID", got.UUID, want.UUID)
	}
	if got.LeaseOwner != want.LeaseOwner {
		add("LeaseOwner", got.LeaseOwner, want.LeaseOwner)
	}
	if got.LastError != want.LastError {
		add("LastError", got.LastError, want.LastError)
	}
	if got.CancelRequested != want.CancelRequested {
		add("CancelRequested", got.CancelRequested, want.CancelRequested)
	}
	times := []struct {
		name string
		g, w time.Time
	}{
		{"RunAt", got.RunAt, want.RunAt}, {"CreatedAt", got.CreatedAt, want.CreatedAt},
		{"LeaseUntil", got.LeaseUntil, want.LeaseUntil}, {"HeartbeatAt", got.HeartbeatAt, want.HeartbeatAt},
		{"FinishedAt", got.FinishedAt, want.FinishedAt},
	}
	for _, tm := range times {
		if tm.g.IsZero() != tm.w.IsZero() || !tm.g.Equal(tm.w) {
			add(tm.name, tm.g, tm.w)
		}
	}
	return d
}

// sameJob reports an error for each field in which got differs from want.
func (c *tc) sameJob(what string, got, want *leasehold.JobRow) {
	c.Helper()
	for _, d := range diffJob(got, want) {
		c.Errorf("%s: job %d %s", what, want.ID, d)
	}
}

// diffAttempts lists how the history got differs from want.
func diffAttempts(got, want []*leasehold.Attempt) []string {
	if len(got) != len(want) {
		return []string{fmt.Sprintf("%d attempt rows, want %d", len(got), len(want))}
	}
	var d []string
	for i := range got {
		g, w := *got[i], *want[i]
		if !g.ClaimedAt.Equal(w.ClaimedAt) || !g.HeartbeatAt.Equal(w.HeartbeatAt) || !g.EndedAt.Equal(w.EndedAt) {
			d = append(d, fmt.Sprintf("attempt row %d times: got %+v, want %+v", i, g, w))
			continue
		}
		g.ClaimedAt, g.HeartbeatAt, g.EndedAt = w.ClaimedAt, w.HeartbeatAt, w.EndedAt
		if g != w {
			d = append(d, fmt.Sprintf("attempt row %d: got %+v, want %+v", i, g, w))
		}
	}
	return d
}

// snapshot is a job and its history at one point.
type snapshot struct {
	job      *leasehold.JobRow
	attempts []*leasehold.Attempt
}

// snap reads job id and its history.
func (c *tc) snap(id int64) snapshot {
	c.Helper()
	return snapshot{job: c.get(id), attempts: c.attempts(id)}
}

// unchanged reports an error if the job or its history differ from s.
func (c *tc) unchanged(what string, s snapshot) {
	c.Helper()
	now := c.snap(s.job.ID)
	c.sameJob(what+" (must change nothing)", now.job, s.job)
	for _, d := range diffAttempts(now.attempts, s.attempts) {
		c.Errorf("%s (must change nothing): job %d %s", what, s.job.ID, d)
	}
}

// attemptIs checks one history row: its number, owner and outcome.
func (c *tc) attemptIs(a *leasehold.Attempt, jobID int64, n int, owner string, o leasehold.Outcome) {
	c.Helper()
	if a.JobID != jobID || a.Attempt != n || a.Owner != owner || a.Outcome != o {
		c.Errorf("attempt row = {job %d, attempt %d, owner %q, outcome %q}, want {job %d, attempt %d, owner %q, outcome %q}",
			a.JobID, a.Attempt, a.Owner, a.Outcome, jobID, n, owner, o)
	}
	if a.ClaimedAt.IsZero() {
		c.Errorf("job %d attempt %d: ClaimedAt is zero", jobID, n)
	}
	if o == leasehold.OutcomeRunning && !a.EndedAt.IsZero() {
		c.Errorf("job %d attempt %d: running but EndedAt = %v", jobID, n, a.EndedAt)
	}
	if o != leasehold.OutcomeRunning && a.EndedAt.IsZero() {
		c.Errorf("job %d attempt %d: outcome %q but EndedAt is zero", jobID, n, o)
	}
}

// history checks a job's history: one row per (owner, outcome) pair in
// order, numbered from 1.
func (c *tc) history(id int64, want ...any) []*leasehold.Attempt {
	c.Helper()
	as := c.attempts(id)
	if len(as) != len(want)/2 {
		c.Errorf("job %d: %d attempt rows, want %d: %s", id, len(as), len(want)/2, fmtAttempts(as))
		return as
	}
	for i, a := range as {
		c.attemptIs(a, id, i+1, want[2*i].(string), want[2*i+1].(leasehold.Outcome))
	}
	return as
}

func fmtAttempts(as []*leasehold.Attempt) string {
	var b bytes.Buffer
	for _, a := range as {
		fmt.Fprintf(&b, "{attempt %d owner %q outcome %q ended %v} ", a.Attempt, a.Owner, a.Outcome, a.EndedAt)
	}
	return b.String()
}
