package driver

import "time"

// The values of the unique_scope column of a job whose key is scoped
// (InsertParams.UniqueScoped).
const (
	// ScopeForever: the job holds its key for as long as it exists.
	ScopeForever = "forever"
	// ScopeUnfinished: the job holds its key until it is completed,
	// failed or cancelled.
	ScopeUnfinished = "unfinished"
)

// UnfinishedSQL is the predicate, on a leasehold_jobs row, of the states
// that hold a ScopeUnfinished key: every state but the terminal ones, so
// that a state added later holds it too.
const UnfinishedSQL = `status NOT IN ('completed', 'failed', 'cancelled')`

// UniqueScoped reports whether p's unique key is scoped by state or time,
// and so stored apart from the plain keys: a plain key (the default)
// spans every job of the kind for as long as the job exists, and lives in
// the unique_key column; a scoped one lives in unique_scoped_key with its
// scope, window length and window start, and is unique among the jobs of
// the kind with the same key, scope and window that still hold it.
func (p *InsertParams) UniqueScoped() bool {
	return p.UniqueKey != "" && (p.UniqueWhileUnfinished || p.UniqueWindow > 0)
}

// UniqueScope returns the unique_scope value of p: "" for a plain key or
// none, else ScopeForever or ScopeUnfinished.
func (p *InsertParams) UniqueScope() string {
	switch {
	case !p.UniqueScoped():
		return ""
	case p.UniqueWhileUnfinished:
		return ScopeUnfinished
	default:
		return ScopeForever
	}
}

// WindowStart returns the start of the window of length w that holds
// now, both in Unix microseconds: now rounded down to a multiple of w. It
// is 0 when w is not positive. Drivers that compute it in SQL compute the
// same value.
func WindowStart(now int64, w time.Duration) int64 {
	us := w.Microseconds()
	if us <= 0 {
		return 0
	}
	return now - mod(now, us)
}

// mod is the remainder of a / b rounded towards minus infinity, for b > 0.
func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
