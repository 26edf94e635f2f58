package leasehold

import (
	"fmt"
	"time"
)

// UniqueScope says which jobs hold a unique key, and so keep another insert
// of the same kind and key from adding a job (InsertOpts.UniqueKey).
type UniqueScope int

const (
	// UniqueForever, the default: a job holds its key for as long as it
	// exists, in every state, finished ones included, until Purge,
	// retention or DeleteJob removes it.
	UniqueForever UniqueScope = iota
	// UniqueWhileUnfinished: a job holds its key until it is completed,
	// failed or cancelled. Pending, processing and stuck jobs hold it, as
	// does any state that is not one of those three. Once the job has
	// finished, an insert with the key adds a new job.
	UniqueWhileUnfinished
)

// MinUniqueWindow is the shortest InsertOpts.UniqueWindow.
const MinUniqueWindow = time.Millisecond

// String returns "forever" or "unfinished".
func (s UniqueScope) String() string {
	switch s {
	case UniqueForever:
		return "forever"
	case UniqueWhileUnfinished:
		return "unfinished"
	}
	return fmt.Sprintf("UniqueScope(%d)", int(s))
}

// uniqueProblem says why o's unique key, scope and window cannot be
// stored, naming the field, or returns "", "".
func uniqueProblem(o *InsertOpts) (field, problem string) {
	if p := uniqueKeyProblem(o.UniqueKey); p != "" {
		return "unique_key", p
	}
	switch {
	case o.UniqueScope != UniqueForever && o.UniqueScope != UniqueWhileUnfinished:
		return "unique_scope", fmt.Sprintf("unknown %v", o.UniqueScope)
	case o.UniqueWindow < 0:
		return "unique_window", fmt.Sprintf("negative UniqueWindow %v", o.UniqueWindow)
	case o.UniqueWindow > 0 && (o.UniqueWindow < MinUniqueWindow || o.UniqueWindow%time.Microsecond != 0):
		return "unique_window", fmt.Sprintf("UniqueWindow %v is not a whole number of microseconds of at least %v",
			o.UniqueWindow, MinUniqueWindow)
	case o.UniqueKey == "" && (o.UniqueScope != UniqueForever || o.UniqueWindow != 0):
		return "unique_key", "UniqueScope and UniqueWindow need a UniqueKey"
	}
	return "", ""
}

// uniqueKeyProblem says why key cannot be a unique key, or returns "".
func uniqueKeyProblem(key string) string {
	if len(key) > MaxUniqueKeyLen {
		return fmt.Sprintf("%s is longer than %d bytes", quoteInput(key), MaxUniqueKeyLen)
	}
	if p := textProblem(key, true); p != "" {
		return fmt.Sprintf("%s: %s", quoteInput(key), p)
	}
	return ""
}
