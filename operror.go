package leasehold

import (
	"fmt"
	"strings"
)

// opError is the error of an operator call (GetJob, RetryJob...). Its
// message names the library and the operation once, followed by the
// driver's reason without a second "leasehold: " ("leasehold: get job 2:
// job not found"); it unwraps to the driver's error for errors.Is.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	return "leasehold: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "leasehold: ")
}

func (e *opError) Unwrap() error { return e.err }

// opErr wraps err with the operation named by format and args.
func opErr(err error, format string, args ...any) error {
	return &opError{op: fmt.Sprintf(format, args...), err: err}
}
