package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
)

// MaxScheduleAhead bounds how far in the future a job may be scheduled.
const MaxScheduleAhead = 3650 * Day

// ParseStates parses a comma-separated list of job statuses.
func ParseStates(s string) ([]leasehold.JobState, error) {
	var out []leasehold.JobState
	for _, part := range strings.Split(s, ",") {
		st := leasehold.JobState(strings.ToLower(strings.TrimSpace(part)))
		if st == "" {
			continue
		}
		if !st.Valid() {
			return nil, Usagef("unknown status %q (want one of %s)", part, statesList())
		}
		out = append(out, st)
	}
	return out, nil
}

func statesList() string {
	names := make([]string, len(leasehold.AllStates))
	for i, s := range leasehold.AllStates {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// StatesValue is a pflag.Value collecting statuses from repeated or
// comma-separated flags.
type StatesValue struct{ States []leasehold.JobState }

// Set adds the statuses in s.
func (v *StatesValue) Set(s string) error {
	states, err := ParseStates(s)
	if err != nil {
		return err
	}
	v.States = append(v.States, states...)
	return nil
}

// String returns the statuses, comma-separated.
func (v *StatesValue) String() string {
	names := make([]string, len(v.States))
	for i, s := range v.States {
		names[i] = string(s)
	}
	return strings.Join(names, ",")
}

// Type names the flag's type in help output.
func (v *StatesValue) Type() string { return "status" }

// ParseJobID parses a job id argument.
func ParseJobID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || id < 1 {
		return 0, Usagef("invalid job id %q (want a positive integer)", s)
	}
	return id, nil
}

// MaxValueFile bounds what ReadValue reads from a file or standard input;
// the library refuses payloads above its own, smaller limit with a clear
// error.
const MaxValueFile = 64 << 20

// ReadValue resolves a flag value that may name its source: "@PATH" reads
// the file PATH, "-" reads stdin to its end, anything else is the value
// itself. Surrounding whitespace of what is read is dropped. what names
// the flag in errors. A read that has not ended when ctx is done (a
// producer that never closes the pipe, a FIFO nobody writes) is given up
// with ctx's cause, so that SIGINT ends the command.
func ReadValue(ctx context.Context, what, v string, stdin io.Reader) (string, error) {
	var (
		r    io.Reader
		from string
	)
	switch {
	case v == "-":
		if stdin == nil {
			return "", Usagef("%s -: no standard input", what)
		}
		r, from = stdin, "standard input"
	case strings.HasPrefix(v, "@"):
		path := v[1:]
		if path == "" {
			return "", Usagef("%s @: name a file after @ (e.g. %s @args.json)", what, what)
		}
		f, err := os.Open(path)
		if err != nil {
			return "", Usagef("%s: cannot read %s: %v", what, path, pathReason(err))
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return "", Usagef("%s: cannot read %s: it is a directory", what, path)
		}
		r, from = f, path
	default:
		return v, nil
	}
	b, err := readAll(ctx, io.LimitReader(r, MaxValueFile+1))
	if err != nil {
		return "", Failf("%s: read %s: %w", what, from, err)
	}
	if len(b) > MaxValueFile {
		return "", Usagef("%s: %s holds more than %d MiB", what, from, MaxValueFile>>20)
	}
	return string(bytes.TrimSpace(b)), nil
}

// readAll is io.ReadAll of r, given up when ctx is done first. The read
// goes on in its goroutine until r ends; the command exits meanwhile.
func readAll(ctx context.Context, r io.Reader) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		done <- result{b, err}
	}()
	select {
	case res := <-done:
		return res.b, res.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// pathReason drops the operation and the path from a file error.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParseJSONObject checks that s is a JSON object and returns it. what
// names the flag in the error. Numbers are kept as written: one past
// float64's range is valid JSON, and the library judges its range.
func ParseJSONObject(what, s string) (json.RawMessage, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	err := dec.Decode(&v)
	if errors.Is(err, io.EOF) {
		err = errors.New("no JSON value")
	}
	if err == nil {
		if _, next := dec.Token(); !errors.Is(next, io.EOF) {
			err = errors.New("more after the JSON value")
		}
	}
	if err != nil {
		return nil, Usagef("%s is not valid JSON: %v", what, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, Usagef("%s must be a JSON object, like {\"key\": \"value\"}", what)
	}
	return json.RawMessage(s), nil
}

// ParseRunAt parses --run-at: an RFC 3339 time, or a duration from now
// (90s, 15m, 2d). It returns either an absolute time or a delay; a time
// more than MaxScheduleAhead after now, or a negative delay, is a usage
// error.
func ParseRunAt(s string, now time.Time) (at time.Time, in time.Duration, err error) {
	s = strings.TrimSpace(s)
	t, perr := time.Parse(time.RFC3339Nano, s)
	if perr != nil && len(s) > 4 && s[4] == '-' { // a date, not a delay
		return time.Time{}, 0, Usagef("invalid run-at %q: want an RFC 3339 time (2030-01-02T15:04:05Z): %v", s, perr)
	}
	if perr == nil {
		if t.After(now.Add(MaxScheduleAhead)) {
			return time.Time{}, 0, Usagef("run-at %s is too far ahead (maximum %s from now)", s, FormatDuration(MaxScheduleAhead))
		}
		if t.UTC().Year() < 1970 {
			return time.Time{}, 0, Usagef("run-at %s is before 1970", s)
		}
		return t, 0, nil
	}
	d, err := ParseDuration(strings.TrimPrefix(s, "+"), 0, MaxScheduleAhead)
	if err != nil {
		return time.Time{}, 0, Usagef("invalid run-at %q: want an RFC 3339 time (2030-01-02T15:04:05Z) or a delay from now (90s, 15m, 2d): %v", s, unwrapUsage(err))
	}
	return time.Time{}, d, nil
}

func unwrapUsage(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}
