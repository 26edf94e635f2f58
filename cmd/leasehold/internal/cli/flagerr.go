package cli

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/leasehold/leasehold"
)

// restated is an error whose message restates the error it wraps in the
// command's words; errors.Is and errors.As see the wrapped error.
type restated struct {
	msg string
	err error
}

// Error returns the restated message.
func (e *restated) Error() string { return e.msg }

// Unwrap returns the restated error.
func (e *restated) Unwrap() error { return e.err }

// Restate returns an error that reads as format says and wraps err.
func Restate(err error, format string, args ...any) error {
	return &restated{msg: fmt.Sprintf(format, args...), err: err}
}

// FlagError returns a usage error (exit code 2) saying that flag's value
// was refused: "FLAG: reason". A refusal by the library (an
// *leasehold.InvalidInputError) is said by its reason alone, without the
// library's prefix and field name, which the flag replaces.
func FlagError(flag string, err error) error {
	var bad *leasehold.InvalidInputError
	if errors.As(err, &bad) && bad.Reason != "" {
		return UsageError(Restate(err, "%s: %s", flag, bad.Reason))
	}
	return UsageError(fmt.Errorf("%s: %w", flag, err))
}

// CheckAddr checks that addr, the value of flag, is an address to listen
// on: host:port with a port number from 0 to 65535 (or a service name). A
// bad address is a usage error (exit code 2).
func CheckAddr(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Usagef("%s %q: want host:port (%v)", flag, addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return Usagef("%s %q: want host:port with a port from 0 to 65535 (%v)", flag, addr, err)
	}
	return nil
}

// FieldFlags names the flag that fills each field of an
// *leasehold.InvalidInputError ("queue": "--queue").
type FieldFlags map[string]string

// Restate returns err as a FlagError of the flag that fills the field
// the library refused, and err itself when it is no refusal of a field of
// f.
func (f FieldFlags) Restate(err error) error {
	var bad *leasehold.InvalidInputError
	if !errors.As(err, &bad) {
		return err
	}
	if flag, ok := f[bad.Field]; ok {
		return FlagError(flag, err)
	}
	return err
}

// RefuseEmpty returns a usage error naming the first flag of names given
// on the command line with an empty (or blank) value, such as
// `--kind="$KIND"` with KIND unset: taken as the flag's default, it would
// silently mean no filter, no key or no metadata.
func RefuseEmpty(fl *pflag.FlagSet, names ...string) error {
	for _, name := range names {
		if f := fl.Lookup(name); f != nil && f.Changed && blank(f.Value) {
			return Usagef("--%s is empty: give it a value, or leave the flag out", name)
		}
	}
	return nil
}

// blank reports whether v holds nothing but white space: for a list
// (comma-separated or repeated), whether every element is blank.
func blank(v pflag.Value) bool {
	s, ok := v.(pflag.SliceValue)
	if !ok {
		return strings.TrimSpace(v.String()) == ""
	}
	for _, e := range s.GetSlice() {
		if strings.TrimSpace(e) != "" {
			return false
		}
	}
	return true
}

// FlagParseError restates a value pflag could not parse in the command's
// words: `--limit "abc": want a whole number` rather than strconv's
// `strconv.ParseInt: parsing "abc": invalid syntax`. Any other error is
// returned as it is.
func FlagParseError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err
	}
	flag := "--" + bad.GetFlag().Name
	var num *strconv.NumError
	if !errors.As(err, &num) {
		return Restate(err, "%s %s: %v", flag, strconv.Quote(bad.GetValue()), errors.Unwrap(bad))
	}
	want := map[string]string{
		"bool": "true or false", "int": "a whole number", "int64": "a whole number", "uint": "a whole number from 0",
		"float64": "a number", "intSlice": "whole numbers, comma-separated",
	}[bad.GetFlag().Value.Type()]
	switch {
	case errors.Is(num.Err, strconv.ErrRange):
		return Restate(err, "%s %s: out of range", flag, strconv.Quote(bad.GetValue()))
	case want != "":
		return Restate(err, "%s %s: want %s", flag, strconv.Quote(bad.GetValue()), want)
	}
	return Restate(err, "%s %s: not a valid %s", flag, strconv.Quote(bad.GetValue()), bad.GetFlag().Value.Type())
}
