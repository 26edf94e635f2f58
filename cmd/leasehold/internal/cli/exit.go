package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/leasehold/leasehold"
)

// Exit codes of the leasehold command.
const (
	ExitOK       = 0 // success
	ExitFailure  = 1 // runtime failure: database unreachable, demo check failed...
	ExitUsage    = 2 // bad flag, argument, JSON, duration or status
	ExitNotFound = 3 // unknown job id or periodic schedule
)

// Error is an error that carries the exit code the command ends with.
type Error struct {
	Code int
	Err  error
}

// Error returns the message of the wrapped error.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// Usagef returns a usage error (exit code 2).
func Usagef(format string, args ...any) error {
	return &Error{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// UsageError marks err as a usage error (exit code 2). It returns nil for
// a nil err.
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: ExitUsage, Err: err}
}

// Failf returns a runtime failure (exit code 1).
func Failf(format string, args ...any) error {
	return &Error{Code: ExitFailure, Err: fmt.Errorf(format, args...)}
}

// ExitCode maps err to the command's exit code: 0 for nil, the code of an
// *Error, 3 for an unknown job, 2 for arguments the library rejected, and
// 1 otherwise.
func ExitCode(err error) int {
	var e *Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, leasehold.ErrJobNotFound):
		return ExitNotFound
	case errors.Is(err, leasehold.ErrInvalidArgs), errors.Is(err, leasehold.ErrInvalidKind),
		errors.Is(err, leasehold.ErrInvalidQueue), errors.Is(err, leasehold.ErrPayloadTooLarge),
		errors.As(err, new(*leasehold.InvalidInputError)):
		return ExitUsage
	}
	return ExitFailure
}

// Message renders err as the single line the command prints on stderr:
// "leasehold: ..." without repeated prefixes (also inside, where a flag's
// name came before a library error), line breaks or control characters
// (shown as escapes, as in tables: an error may quote input raw), with a
// hint when the database has no leasehold schema yet.
func Message(err error) string {
	msg := err.Error()
	for {
		trimmed := strings.TrimPrefix(msg, "leasehold: ")
		if trimmed == msg {
			break
		}
		msg = trimmed
	}
	msg = strings.ReplaceAll(msg, ": leasehold: ", ": ")
	msg = Printable(strings.Join(strings.Fields(msg), " "))
	if IsNoSchema(err) {
		msg += " (the database has no leasehold schema: run `leasehold migrate` first)"
	}
	return "leasehold: " + msg
}

// IsNoSchema reports whether err says the leasehold tables do not exist.
func IsNoSchema(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "42P01" // undefined_table
	}
	return err != nil && strings.Contains(err.Error(), "no such table: leasehold_")
}
