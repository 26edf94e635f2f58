package leasehold

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// InvalidInputError reports an input refused before it reaches the
// database: a job's kind, queue, arguments, metadata, unique key or insert
// option, a ListJobs filter, a checkpoint, a periodic job's name, a
// reconcile resolution's note or an owner. Every driver refuses exactly
// the same inputs with it: text and JSON that PostgreSQL cannot store (NUL
// characters, invalid UTF-8, the JSON escape \u0000, unpaired surrogate
// escapes, numbers beyond its numeric range) are refused on SQLite too, so
// code tested on one database does not meet a raw SQL error on the other.
//
// Branch on the class of problem with errors.Is and the sentinel in Err
// (ErrInvalidKind, ErrInvalidQueue, ErrInvalidArgs, ErrPayloadTooLarge,
// ErrInvalidPeriodic, ErrInvalidConfig), and read the details with
// errors.As:
//
//	var bad *leasehold.InvalidInputError
//	if errors.As(err, &bad) && bad.Index >= 0 {
//		log.Printf("job %d of the batch: %s: %s", bad.Index, bad.Field, bad.Reason)
//	}
type InvalidInputError struct {
	// Field names the refused input as the jobs table and the command-line
	// tool call it:
	//   - inserts: "kind", "queue", "args", "metadata", "unique_key",
	//     "unique_scope", "unique_window", "priority", "max_attempts",
	//     "run_at", or "jobs" (an empty batch, or a job an insert
	//     middleware replaced with nil);
	//   - ListJobs: "kind", "queue", "owner", "search", "state", "limit",
	//     "finished_at" or "expired";
	//   - Checkpoint and CheckpointTx: "checkpoint name" or "checkpoint
	//     data" (returned inside a *PermanentError);
	//   - ValidatePeriodicName and ForgetPeriodic: "periodic name";
	//   - ResolveReconcile and ResolveReconcileTx: "note";
	//   - ValidateOwner: "owner".
	Field string
	// Index is the position of the refused job in the slice passed to
	// InsertMany or InsertBulk (nothing of the batch is inserted), even
	// when an insert middleware broke the job and even in a batch of one;
	// -1 for every other call (Insert, InsertTx, ListJobs, ValidateKind,
	// ValidateQueue and the rest).
	Index int
	// Reason says what is wrong. It echoes at most the first 64 bytes of
	// a refused name or key, quoted, and the offset of a bad byte.
	Reason string
	// Err is the sentinel the error matches with errors.Is.
	Err error
	// Cause is the underlying error, such as the one an Args' MarshalJSON
	// returned, or nil. errors.Is and errors.As see it too.
	Cause error
}

// Error returns "<sentinel>: [job <index>: ]<field>: <reason>[: <cause>]".
func (e *InvalidInputError) Error() string {
	var b strings.Builder
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("leasehold: invalid input")
	}
	b.WriteString(": ")
	if e.Index >= 0 {
		fmt.Fprintf(&b, "job %d: ", e.Index)
	}
	b.WriteString(e.Field)
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel and the cause, for errors.Is and errors.As.
func (e *InvalidInputError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// invalid returns the refusal of field (Index -1) for sentinel is.
func invalid(is error, field, format string, args ...any) *InvalidInputError {
	return &InvalidInputError{Field: field, Index: -1, Reason: fmt.Sprintf(format, args...), Err: is}
}

// atIndex returns err as the refusal of job i of a batch.
func atIndex(err error, i int) error {
	if bad, ok := err.(*InvalidInputError); ok {
		at := *bad
		at.Index = i
		return &at
	}
	return fmt.Errorf("job %d: %w", i, err)
}

// maxEchoedInput bounds how much of a refused name, key or owner an error
// message repeats, in bytes.
const maxEchoedInput = 64

// quoteInput quotes s for an error message, as %q does, cut after
// maxEchoedInput bytes (never inside a UTF-8 sequence) and followed by its
// full length when cut: a 10 KB kind name reads `"kkk…"… (10240 bytes)`.
func quoteInput(s string) string {
	if len(s) <= maxEchoedInput {
		return strconv.Quote(s)
	}
	cut := maxEchoedInput
	for cut > maxEchoedInput-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// textProblem says why s cannot be stored as database text, or returns
// "": PostgreSQL refuses invalid UTF-8 (SQLSTATE 22021) and NUL
// characters in text; with controls set, control characters (C0, DEL and
// C1), which would garble the terminals and logs s is printed in, are
// refused too.
func textProblem(s string, controls bool) string {
	if !utf8.ValidString(s) {
		for i, r := range s {
			if r == utf8.RuneError {
				if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
					return fmt.Sprintf("invalid UTF-8 at byte %d", i)
				}
			}
		}
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Sprintf("NUL character at byte %d", i)
	}
	if controls {
		if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
			r, _ := utf8.DecodeRuneInString(s[i:])
			return fmt.Sprintf("control character %U at byte %d", r, i)
		}
	}
	return ""
}

// validateListParams refuses ListJobs filters that no stored job can
// match, before PostgreSQL would refuse them as text: an unknown state, a
// malformed kind or queue name, an owner that is not valid UTF-8 or
// holds control characters (as Config.Owner may not), or a search that is
// not valid UTF-8 or holds a NUL.
func validateListParams(p *ListParams) error {
	for _, s := range p.States {
		if !s.Valid() {
			return invalid(ErrInvalidArgs, "state", "unknown state %s (want one of %v)", quoteInput(string(s)), AllStates)
		}
	}
	if p.Limit < 0 {
		return invalid(ErrInvalidArgs, "limit", "negative limit %d", p.Limit)
	}
	if p.Kind != "" {
		if err := ValidateKind(p.Kind); err != nil {
			return err
		}
	}
	if p.Queue != "" {
		if err := ValidateQueue(p.Queue); err != nil {
			return err
		}
	}
	if prob := textProblem(p.Owner, true); prob != "" {
		return invalid(ErrInvalidArgs, "owner", "%s: %s", quoteInput(p.Owner), prob)
	}
	if prob := textProblem(p.Search, false); prob != "" {
		return invalid(ErrInvalidArgs, "search", "%s: %s", quoteInput(p.Search), prob)
	}
	return validateByFinish(p)
}

// validateByFinish refuses a finish-time order of unfinished states, which
// it would never return, and a finish-time keyset without that order or
// outside the years 1 to 9999 UTC, which no job finished in (PostgreSQL
// refuses some such times and SQLite's microseconds overflow on others).
func validateByFinish(p *ListParams) error {
	if !p.FinishedAt.IsZero() && !p.ByFinish {
		return invalid(ErrInvalidArgs, "finished_at", "a finish-time keyset needs ByFinish")
	}
	if !p.FinishedAt.IsZero() && !storableYear(p.FinishedAt) {
		return invalid(ErrInvalidArgs, "finished_at", "%s is outside the years 1 to 9999",
			p.FinishedAt.UTC().Format(time.RFC3339))
	}
	if !p.ByFinish {
		return nil
	}
	for _, s := range p.States {
		if !s.Finished() {
			return invalid(ErrInvalidArgs, "state", "%s jobs have no finish time to order by", s)
		}
	}
	if p.Expired {
		return invalid(ErrInvalidArgs, "expired", "expired leases have no finish time to order by")
	}
	return nil
}

// escapeControl returns s with its control characters and invalid UTF-8
// escaped as in a Go string literal, for an error message that echoes
// outside input (a terminal would otherwise run the escape sequences).
func escapeControl(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
