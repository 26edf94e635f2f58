package leasehold

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Args is implemented by the typed arguments of a job. Kind names the job
// type; it selects the worker that runs it. Args are stored as JSON.
type Args interface {
	Kind() string
}

// RawArgs carries arguments already encoded as JSON, for tools that do not
// know the Go type of a kind (such as the leasehold command). The bytes are
// checked like any other arguments (see InvalidInputError).
type RawArgs struct {
	KindName string
	JSON     json.RawMessage
}

// Kind returns the kind name.
func (r RawArgs) Kind() string { return r.KindName }

// MarshalJSON returns the raw JSON, or {} when empty.
func (r RawArgs) MarshalJSON() ([]byte, error) {
	if len(r.JSON) == 0 {
		return []byte("{}"), nil
	}
	return r.JSON, nil
}

// maxNameLen bounds kind and queue names, in bytes.
const maxNameLen = 128

// nameRule is the rule for kind and queue names, as error messages state it.
const nameRule = "want 1-128 of [A-Za-z0-9_.:-/], starting with a letter or digit"

// validName reports whether name is 1 to maxNameLen characters of letters,
// digits and _ . : - /, starting with a letter or digit. It runs for every
// inserted job, so it is a loop rather than a regular expression.
func validName(name string) bool {
	if len(name) == 0 || len(name) > maxNameLen {
		return false
	}
	for i := range len(name) {
		if !nameByte(name[i], i == 0) {
			return false
		}
	}
	return true
}

// nameByte reports whether b may appear in a name (first: at its start).
func nameByte(b byte, first bool) bool {
	alnum := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
	return alnum || !first && strings.IndexByte("_.:-/", b) >= 0
}

// nameProblem says why name is not a valid kind or queue name, echoing a
// readable prefix of it.
func nameProblem(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > maxNameLen:
		return fmt.Sprintf("%s is longer than %d bytes", quoteInput(name), maxNameLen)
	}
	if p := textProblem(name, false); p != "" {
		return fmt.Sprintf("%s: %s", quoteInput(name), p)
	}
	for i, r := range name {
		if r >= utf8.RuneSelf || !nameByte(byte(r), i == 0) {
			return fmt.Sprintf("%s: %q at byte %d", quoteInput(name), r, i)
		}
	}
	return quoteInput(name)
}

// ValidateKind checks that kind is a usable kind name: 1 to 128 characters
// of letters, digits and _ . : - /, starting with a letter or digit. It
// returns an *InvalidInputError matching ErrInvalidKind.
func ValidateKind(kind string) error {
	if !validName(kind) {
		return invalid(ErrInvalidKind, "kind", "%s (%s)", nameProblem(kind), nameRule)
	}
	return nil
}

// ValidateQueue checks that queue is a usable queue name, by the same rule
// as ValidateKind. It returns an *InvalidInputError matching
// ErrInvalidQueue.
func ValidateQueue(queue string) error {
	if !validName(queue) {
		return invalid(ErrInvalidQueue, "queue", "%s (%s)", nameProblem(queue), nameRule)
	}
	return nil
}

// nilPointer reports whether args is a nil pointer: its Kind may
// dereference it, and it encodes as null, not an object.
func nilPointer(args Args) bool {
	v := reflect.ValueOf(args)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// encodeArgs validates the kind and encodes args as a JSON object within
// the size limit that every driver can store (see jsonSize).
func encodeArgs(args Args, limit int) (kind string, data []byte, err error) {
	if args == nil || nilPointer(args) {
		return "", nil, invalid(ErrInvalidArgs, "args", "nil args")
	}
	kind = args.Kind()
	if err := ValidateKind(kind); err != nil {
		return "", nil, err
	}
	data, err = json.Marshal(args)
	if err != nil {
		bad := invalid(ErrInvalidArgs, "args", "kind %s: cannot encode", kind)
		bad.Cause = err
		return "", nil, bad
	}
	return kind, data, checkArgs(kind, data, limit)
}

// checkArgs checks encoded arguments: a JSON object every driver can
// store, at most limit bytes both as encoded and as stored (see
// checkPayload).
func checkArgs(kind string, data []byte, limit int) error {
	return checkPayload("args", "kind "+kind+": ", data, limit)
}

// checkMetadata checks a job's metadata, when set, as checkArgs checks
// its arguments.
func checkMetadata(data []byte, limit int) error {
	if len(data) == 0 {
		return nil
	}
	return checkPayload("metadata", "", data, limit)
}

// checkPayload checks the JSON object data of field (prefix starts the
// reason): ErrInvalidArgs unless every driver can store it, and
// ErrPayloadTooLarge when it is longer than limit bytes, either as
// encoded or with its numbers written out as PostgreSQL's jsonb stores and
// returns them (see jsonSize), so that the limit bounds what every driver
// hands back and both drivers refuse the same payloads.
func checkPayload(field, prefix string, data []byte, limit int) error {
	if len(data) > limit {
		return invalid(ErrPayloadTooLarge, field, "%s%d bytes, limit %d", prefix, len(data), limit)
	}
	stored, p := jsonObjectSize(data)
	if p != "" {
		return invalid(ErrInvalidArgs, field, "%s%s", prefix, p)
	}
	if stored > int64(limit) {
		return invalid(ErrPayloadTooLarge, field, "%s%d bytes, %d with its numbers written out in full as stored, limit %d",
			prefix, len(data), stored, limit)
	}
	return nil
}
