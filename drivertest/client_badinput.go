package drivertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// badInput is one input the library must refuse before any SQL, on every
// driver, with the same typed error.
type badInput struct {
	name  string
	args  leasehold.Args
	opts  *leasehold.InsertOpts
	field string
	is    error
}

// stringArgs encodes a Go string with encoding/json, which escapes NUL as
// \u0000 (valid JSON that PostgreSQL's jsonb cannot store).
type stringArgs struct {
	S string `json:"s"`
}

// Kind implements leasehold.Args.
func (stringArgs) Kind() string { return "test" }

func raw(kind, js string) leasehold.RawArgs {
	return leasehold.RawArgs{KindName: kind, JSON: json.RawMessage(js)}
}

func badInputs() []badInput {
	ok := raw("test", `{}`)
	meta := func(js string) *leasehold.InsertOpts { return &leasehold.InsertOpts{Metadata: json.RawMessage(js)} }
	return []badInput{
		{"NULInKind", raw("te\x00st", `{}`), nil, "kind", leasehold.ErrInvalidKind},
		{"InvalidUTF8InKind", raw("te\xffst", `{}`), nil, "kind", leasehold.ErrInvalidKind},
		{"NULInQueue", ok, &leasehold.InsertOpts{Queue: "q\x00"}, "queue", leasehold.ErrInvalidQueue},
		{"InvalidUTF8InQueue", ok, &leasehold.InsertOpts{Queue: "q\xc3"}, "queue", leasehold.ErrInvalidQueue},
		{"NULInUniqueKey", ok, &leasehold.InsertOpts{UniqueKey: "key\x00"}, "unique_key", leasehold.ErrInvalidArgs},
		{"InvalidUTF8InUniqueKey", ok, &leasehold.InsertOpts{UniqueKey: "key\xff\xfe"}, "unique_key", leasehold.ErrInvalidArgs},
		{"ControlCharacterInUniqueKey", ok, &leasehold.InsertOpts{UniqueKey: "key\x1b[2J"}, "unique_key", leasehold.ErrInvalidArgs},
		{"UnknownUniqueScope", ok, &leasehold.InsertOpts{UniqueKey: "k", UniqueScope: 7}, "unique_scope", leasehold.ErrInvalidArgs},
		{"UniqueScopeWithoutKey", ok, &leasehold.InsertOpts{UniqueScope: leasehold.UniqueWhileUnfinished}, "unique_key", leasehold.ErrInvalidArgs},
		{"UniqueWindowWithoutKey", ok, &leasehold.InsertOpts{UniqueWindow: time.Hour}, "unique_key", leasehold.ErrInvalidArgs},
		{"NegativeUniqueWindow", ok, &leasehold.InsertOpts{UniqueKey: "k", UniqueWindow: -time.Hour}, "unique_window", leasehold.ErrInvalidArgs},
		{"UniqueWindowTooShort", ok, &leasehold.InsertOpts{UniqueKey: "k", UniqueWindow: time.Microsecond}, "unique_window", leasehold.ErrInvalidArgs},
		{"UniqueWindowNotWholeMicroseconds", ok, &leasehold.InsertOpts{UniqueKey: "k", UniqueWindow: time.Second + 1}, "unique_window", leasehold.ErrInvalidArgs},
		{"NULInGoStringArgs", stringArgs{S: "a\x00b"}, nil, "args", leasehold.ErrInvalidArgs},
		{"EscapedNULInRawArgs", raw("test", `{"s":"a\u0000b"}`), nil, "args", leasehold.ErrInvalidArgs},
		{"EscapedNULInArgsKey", raw("test", `{"\u0000":1}`), nil, "args", leasehold.ErrInvalidArgs},
		{"InvalidUTF8InRawArgs", raw("test", "{\"s\":\"\xff\"}"), nil, "args", leasehold.ErrInvalidArgs},
		{"LoneSurrogateInRawArgs", raw("test", `{"s":"\ud800"}`), nil, "args", leasehold.ErrInvalidArgs},
		{"NumberOutOfRangeInRawArgs", raw("test", `{"n":1e1000000}`), nil, "args", leasehold.ErrInvalidArgs},
		{"EscapedNULInMetadata", ok, meta(`{"m":["x","\u0000"]}`), "metadata", leasehold.ErrInvalidArgs},
		{"InvalidUTF8InMetadata", ok, meta("{\"m\":\"\xed\xa0\x80\"}"), "metadata", leasehold.ErrInvalidArgs},
		{"InvalidUTF8InMetadataKey", ok, meta("{\"\xff\":1}"), "metadata", leasehold.ErrInvalidArgs},
		{"RunAtBeyondYear9999", ok, &leasehold.InsertOpts{RunAt: time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)}, "run_at", leasehold.ErrInvalidArgs},
		{"RunAtBeforeYear1", ok, &leasehold.InsertOpts{RunAt: time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC)}, "run_at", leasehold.ErrInvalidArgs},
		{"NestedTooDeepInRawArgs", raw("test", nested(1001)), nil, "args", leasehold.ErrInvalidArgs},
		{"NestedTooDeepInMetadata", ok, meta(nested(1001)), "metadata", leasehold.ErrInvalidArgs},
	}
}

// nested returns a JSON object whose arrays and objects nest depth levels
// deep, the object itself included.
func nested(depth int) string {
	return `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
}

// testBadInputRefused: NUL characters, invalid UTF-8 and JSON that
// PostgreSQL cannot store are refused before any SQL, identically on every
// driver: through Insert, InsertMany and InsertBulk, with an
// *InvalidInputError that names the field (and the job's index in a
// batch), matches the documented sentinel, leaks no SQL error, and leaves
// no job behind. Inputs that only look suspicious are accepted.
func testBadInputRefused(e *clientEnv) {
	c := e.newClient(e.d, nil, nil)
	good := leasehold.InsertManyParams{Args: testArgs{N: 1}}
	for _, b := range badInputs() {
		e.Run(b.name, func(t *testing.T) {
			bad := leasehold.InsertManyParams{Args: b.args, Opts: b.opts}
			_, err := c.Insert(e.ctx, b.args, b.opts)
			checkBadInput(t, "Insert", err, b, -1)
			_, err = c.InsertMany(e.ctx, nil, []leasehold.InsertManyParams{good, good, bad, good})
			checkBadInput(t, "InsertMany", err, b, 2)
			n, err := c.InsertBulk(e.ctx, []leasehold.InsertManyParams{good, good, good, bad})
			checkBadInput(t, "InsertBulk", err, b, 3)
			if n != 0 {
				t.Errorf("InsertBulk reported %d jobs inserted, want 0", n)
			}
		})
	}
	if rows, err := e.d.ListJobs(e.ctx, &leasehold.ListParams{}); err != nil || len(rows) != 0 {
		e.Fatalf("after refused inserts: %d jobs (%v), want none", len(rows), err)
	}
	e.Run("Filters", func(t *testing.T) { checkBadFilters(t, e, c) })
	e.Run("LookAlikesAccepted", func(t *testing.T) { checkLookAlikesAccepted(t, e, c) })
}

// checkBadInput checks that err is the typed refusal of b at index.
func checkBadInput(t *testing.T, via string, err error, b badInput, index int) {
	t.Helper()
	var bad *leasehold.InvalidInputError
	switch {
	case err == nil:
		t.Errorf("%s: accepted, want %v", via, b.is)
		return
	case !errors.As(err, &bad):
		t.Errorf("%s: %v (%T), want an *InvalidInputError", via, err, err)
		return
	}
	if bad.Field != b.field || bad.Index != index || !errors.Is(err, b.is) {
		t.Errorf("%s: field %q index %d, is %v: %v; want field %q index %d, errors.Is %v",
			via, bad.Field, bad.Index, errors.Is(err, b.is), err, b.field, index, b.is)
	}
	checkCleanMessage(t, via, err)
}

// checkCleanMessage checks that a refusal reads the same on every driver:
// no SQL error text, no raw NUL or invalid UTF-8 echoed, one short line.
func checkCleanMessage(t *testing.T, via string, err error) {
	t.Helper()
	msg := err.Error()
	for _, leak := range []string{"SQLSTATE", "pgdriver", "sqlitedriver", "sqlite", "ERROR", "\x00", "\n"} {
		if strings.Contains(msg, leak) {
			t.Errorf("%s: message %q contains %q", via, msg, leak)
		}
	}
	if !strings.Contains(msg, "leasehold: ") || len(msg) > 400 {
		t.Errorf("%s: message %q: want a short leasehold error", via, msg)
	}
}

// checkBadFilters: ListJobs filters that PostgreSQL could not compare are
// refused the same way.
func checkBadFilters(t *testing.T, e *clientEnv, c *leasehold.Client) {
	cases := []struct {
		p     leasehold.ListParams
		field string
		is    error
	}{
		{leasehold.ListParams{Queue: "q\x00"}, "queue", leasehold.ErrInvalidQueue},
		{leasehold.ListParams{Kind: "k\xff"}, "kind", leasehold.ErrInvalidKind},
		{leasehold.ListParams{Owner: "host-1\x00"}, "owner", leasehold.ErrInvalidArgs},
		{leasehold.ListParams{Owner: "host-\xff"}, "owner", leasehold.ErrInvalidArgs},
		{leasehold.ListParams{Search: "a\x00b"}, "search", leasehold.ErrInvalidArgs},
		{leasehold.ListParams{Search: "caf\xe9"}, "search", leasehold.ErrInvalidArgs},
	}
	for _, tc := range cases {
		_, err := c.ListJobs(e.ctx, &tc.p)
		checkBadInput(t, "ListJobs", err, badInput{field: tc.field, is: tc.is}, -1)
	}
}

// checkLookAlikesAccepted: valid inputs close to the refused ones are
// stored by every driver: an escaped backslash before u0000, a surrogate
// pair, other control escapes, non-ASCII text, numbers at the edge of
// PostgreSQL's range, and a non-ASCII unique key.
func checkLookAlikesAccepted(t *testing.T, e *clientEnv, c *leasehold.Client) {
	args := raw("test", `{"a":"\\u0000","b":"\ud83d\ude00","c":"\u0001\t","d":"é✓","e":1e131071,"f":1e-16383,"g":-0.5E+3}`)
	opts := &leasehold.InsertOpts{UniqueKey: "clé ✓ 🔑", Metadata: json.RawMessage(`{"\\u0000":"\u00e9"}`)}
	res, err := c.Insert(e.ctx, args, opts)
	if err != nil {
		t.Fatalf("Insert of valid look-alikes: %v", err)
	}
	row, err := e.d.GetJob(e.ctx, res.Job.ID)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if row.UniqueKey != opts.UniqueKey {
		t.Errorf("unique key stored as %q, want %q", row.UniqueKey, opts.UniqueKey)
	}
	var got map[string]any
	dec := json.NewDecoder(bytes.NewReader(row.Args))
	dec.UseNumber() // 1e131071 overflows a float64
	if err := dec.Decode(&got); err != nil || got["a"] != `\u0000` || got["b"] != "😀" || got["d"] != "é✓" {
		t.Errorf("args stored as %s (%v)", row.Args, err)
	} // The deepest nesting the library accepts is stored by every driver.
	deep := raw("test", nested(1000))
	if _, err := c.Insert(e.ctx, deep, &leasehold.InsertOpts{Metadata: json.RawMessage(nested(1000))}); err != nil {
		t.Errorf("Insert of args and metadata nested 1,000 deep: %v", err)
	}
}
