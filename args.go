package leasehold

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Args is implemented by the typed arguments of a job. Kind names the job
// type; it selects the worker that runs it. Args are stored as JSON.
type Args interface {
	Kind() string
}

// RawArgs carries arguments already encoded as JSON, for tools that do not
// know the Go type of a kind (such as the leasehold command).
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

// validName reports whether name is 1 to 128 characters of letters,
// digits and _ . : - /, starting with a letter or digit. It runs for every
// inserted job, so it is a loop rather than a regular expression.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := range len(name) {
		b := name[i]
		alnum := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("_.:-/", rune(b))) {
			return false
		}
	}
	return true
}

// ValidateKind checks that kind is a usable kind name: 1 to 128 characters
// of letters, digits and _ . : - /, starting with a letter or digit.
func ValidateKind(kind string) error {
	if !validName(kind) {
		return fmt.Errorf("%w: %q (want 1-128 of [A-Za-z0-9_.:-/])", ErrInvalidKind, kind)
	}
	return nil
}

// ValidateQueue checks that queue is a usable queue name, by the same rule
// as ValidateKind.
func ValidateQueue(queue string) error {
	if !validName(queue) {
		return fmt.Errorf("%w: %q (want 1-128 of [A-Za-z0-9_.:-/])", ErrInvalidQueue, queue)
	}
	return nil
}

// encodeArgs validates the kind and encodes args as a JSON object within
// the size limit.
func encodeArgs(args Args, limit int) (kind string, data []byte, err error) {
	if args == nil {
		return "", nil, fmt.Errorf("%w: nil args", ErrInvalidArgs)
	}
	kind = args.Kind()
	if err := ValidateKind(kind); err != nil {
		return "", nil, err
	}
	data, err = json.Marshal(args)
	if err != nil {
		return "", nil, fmt.Errorf("%w: kind %s: %w", ErrInvalidArgs, kind, err)
	}
	if !json.Valid(data) || len(data) == 0 || data[0] != '{' {
		return "", nil, fmt.Errorf("%w: kind %s: args must encode to a JSON object", ErrInvalidArgs, kind)
	}
	if len(data) > limit {
		return "", nil, fmt.Errorf("%w: kind %s: %d bytes, limit %d", ErrPayloadTooLarge, kind, len(data), limit)
	}
	return kind, data, nil
}
