package leasehold

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// nulArgs encodes a Go string, which encoding/json escapes as \u0000
// when it holds a NUL.
type nulArgs struct {
	S string `json:"s"`
}

func (nulArgs) Kind() string { return "nul" }

// TestInsertRefusals: every refusal of an insert, before any SQL, is an
// *InvalidInputError naming the field, matching its sentinel, with the
// job's index in a batch. nopDriver panics if a refused job reaches it.
func TestInsertRefusals(t *testing.T) {
	c, err := NewClient(Config{Driver: nopDriver{}, MaxPayloadBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	raw := func(js string) RawArgs { return RawArgs{KindName: "k", JSON: json.RawMessage(js)} }
	meta := func(js string) *InsertOpts { return &InsertOpts{Metadata: json.RawMessage(js)} }
	cases := []struct {
		name  string
		args  Args
		opts  *InsertOpts
		field string
		is    error
		want  string
	}{
		{"nil args", nil, nil, "args", ErrInvalidArgs, "nil args"},
		{"NUL in kind", RawArgs{KindName: "k\x00"}, nil, "kind", ErrInvalidKind, `"k\x00": NUL character at byte 1`},
		{"invalid UTF-8 in kind", RawArgs{KindName: "k\xff"}, nil, "kind", ErrInvalidKind, "invalid UTF-8 at byte 1"},
		{"unencodable", unencodable{}, nil, "args", ErrInvalidArgs, "cannot encode: json: unsupported type"},
		{"too large", sizedArgs{Data: strings.Repeat("x", 100)}, nil, "args", ErrPayloadTooLarge, "limit 64"},
		{"raw not object", raw(`[1]`), nil, "args", ErrInvalidArgs, "must be a JSON object"},
		{"NUL in Go string", nulArgs{S: "\x00"}, nil, "args", ErrInvalidArgs, `\u0000 (NUL)`},
		{"escaped NUL in raw", raw(`{"a":"\u0000"}`), nil, "args", ErrInvalidArgs, `\u0000 (NUL)`},
		{"invalid UTF-8 in raw", raw("{\"a\":\"\xff\"}"), nil, "args", ErrInvalidArgs, "invalid UTF-8"},
		{"lone surrogate in raw", raw(`{"a":"\udfff"}`), nil, "args", ErrInvalidArgs, "unpaired surrogate"},
		{"bad queue", sizedArgs{}, &InsertOpts{Queue: "no spaces"}, "queue", ErrInvalidQueue, `"no spaces": ' ' at byte 2`},
		{"NUL in queue", sizedArgs{}, &InsertOpts{Queue: "q\x00"}, "queue", ErrInvalidQueue, "NUL"},
		{"negative priority", sizedArgs{}, &InsertOpts{Priority: -1}, "priority", ErrInvalidArgs, "-1 not in 0..32767"},
		{"negative attempts", sizedArgs{}, &InsertOpts{MaxAttempts: -3}, "max_attempts", ErrInvalidArgs, "-3 not in"},
		{"run at and in", sizedArgs{}, &InsertOpts{RunAt: time1, RunIn: 1}, "run_at", ErrInvalidArgs, "not both"},
		{"negative run in", sizedArgs{}, &InsertOpts{RunIn: -1}, "run_at", ErrInvalidArgs, "negative RunIn"},
		{"bad metadata", sizedArgs{}, meta(`{`), "metadata", ErrInvalidArgs, "not valid JSON"},
		{"metadata too large", sizedArgs{}, meta(`{"a":"` + strings.Repeat("x", 100) + `"}`), "metadata", ErrPayloadTooLarge, "limit 64"},
		{"metadata not object", sizedArgs{}, meta(` {}`), "metadata", ErrInvalidArgs, "must be a JSON object"},
		{"escaped NUL in metadata", sizedArgs{}, meta(`{"a":["\u0000"]}`), "metadata", ErrInvalidArgs, `\u0000 (NUL)`},
		{"invalid UTF-8 in metadata", sizedArgs{}, meta("{\"\xff\":1}"), "metadata", ErrInvalidArgs, "invalid UTF-8"},
		{"long unique key", sizedArgs{}, &InsertOpts{UniqueKey: strings.Repeat("u", 600)}, "unique_key", ErrInvalidArgs, `"… (600 bytes) is longer than 512 bytes`},
		{"NUL in unique key", sizedArgs{}, &InsertOpts{UniqueKey: "u\x00"}, "unique_key", ErrInvalidArgs, `"u\x00": NUL character at byte 1`},
		{"invalid UTF-8 in unique key", sizedArgs{}, &InsertOpts{UniqueKey: "u\xe2\x82"}, "unique_key", ErrInvalidArgs, "invalid UTF-8 at byte 1"},
		{"newline in unique key", sizedArgs{}, &InsertOpts{UniqueKey: "u\n"}, "unique_key", ErrInvalidArgs, "control character U+000A at byte 1"},
		{"C1 control in unique key", sizedArgs{}, &InsertOpts{UniqueKey: "u\u0085"}, "unique_key", ErrInvalidArgs, "control character U+0085"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Insert(t.Context(), tc.args, tc.opts)
			checkRefusal(t, err, tc.field, -1, tc.is, tc.want)
			batch := []InsertManyParams{{Args: sizedArgs{}}, {Args: tc.args, Opts: tc.opts}}
			_, err = c.InsertMany(t.Context(), nil, batch)
			checkRefusal(t, err, tc.field, 1, tc.is, "job 1: "+tc.field+": ")
			_, err = c.InsertBulk(t.Context(), append(batch, InsertManyParams{Args: sizedArgs{}}))
			checkRefusal(t, err, tc.field, 1, tc.is, tc.want)
		})
	}
	for _, key := range []string{"p-1", "clé ✓", "tabs are\u00a0not controls", strings.Repeat("u", MaxUniqueKeyLen)} {
		if _, err := c.buildInsert(sizedArgs{Data: "ok"}, &InsertOpts{UniqueKey: key}); err != nil {
			t.Errorf("valid unique key %.20q refused: %v", key, err)
		}
	}
	_, err = c.InsertMany(t.Context(), nil, nil)
	checkRefusal(t, err, "jobs", -1, ErrInvalidArgs, "no jobs to insert")
}

// time1 is a non-zero time.
var time1 = time.Unix(1, 0)

func checkRefusal(t *testing.T, err error, field string, index int, is error, want string) {
	t.Helper()
	var bad *InvalidInputError
	if !errors.As(err, &bad) {
		t.Fatalf("got %v (%T), want an *InvalidInputError", err, err)
	}
	if bad.Field != field || bad.Index != index || !errors.Is(err, is) || !strings.Contains(err.Error(), want) {
		t.Errorf("got field %q index %d %q, errors.Is(%v) %v; want field %q index %d containing %q",
			bad.Field, bad.Index, err, is, errors.Is(err, is), field, index, want)
	}
}

func TestInvalidInputErrorFormat(t *testing.T) {
	cause := errors.New("boom")
	e := &InvalidInputError{Field: "args", Index: 3, Reason: "kind k: cannot encode", Err: ErrInvalidArgs, Cause: cause}
	if got, want := e.Error(), "leasehold: invalid arguments: job 3: args: kind k: cannot encode: boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, ErrInvalidArgs) || !errors.Is(e, cause) || errors.Is(e, ErrInvalidKind) {
		t.Errorf("errors.Is: sentinel %v, cause %v, other sentinel %v; want true, true, false",
			errors.Is(e, ErrInvalidArgs), errors.Is(e, cause), errors.Is(e, ErrInvalidKind))
	}
	single := &InvalidInputError{Field: "queue", Index: -1, Reason: `"q q": ' ' at byte 1`, Err: ErrInvalidQueue}
	if got, want := single.Error(), `leasehold: invalid queue name: queue: "q q": ' ' at byte 1`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestListFilterRefusals: filters no job can match, or PostgreSQL could
// not compare as text, are refused before the driver is called.
func TestListFilterRefusals(t *testing.T) {
	c, err := NewClient(Config{Driver: nopDriver{}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		p     ListParams
		field string
		is    error
	}{
		{ListParams{States: []JobState{"bogus"}}, "state", ErrInvalidArgs},
		{ListParams{Limit: -1}, "limit", ErrInvalidArgs},
		{ListParams{Kind: "k\x00"}, "kind", ErrInvalidKind},
		{ListParams{Queue: "q\xff"}, "queue", ErrInvalidQueue},
		{ListParams{Owner: "host\x00"}, "owner", ErrInvalidArgs},
		{ListParams{Owner: "host\xff"}, "owner", ErrInvalidArgs},
		{ListParams{ByFinish: true, States: []JobState{StateCompleted, StatePending}}, "state", ErrInvalidArgs},
		{ListParams{ByFinish: true, Expired: true}, "expired", ErrInvalidArgs},
		{ListParams{FinishedAt: time.Now()}, "finished_at", ErrInvalidArgs},
		{ListParams{ByFinish: true, FinishedAt: time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("EST", -5*3600))}, "finished_at", ErrInvalidArgs},
	}
	for _, tc := range cases {
		_, err := c.ListJobs(t.Context(), &tc.p)
		checkRefusal(t, err, tc.field, -1, tc.is, tc.field+": ")
	}
}

// TestQueueReadRefusals: a negative count limit and a window that is not
// positive are refused before the driver is called.
func TestQueueReadRefusals(t *testing.T) {
	c, err := NewClient(Config{Driver: nopDriver{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ActiveQueueStats(t.Context(), -1); !errors.Is(err, ErrInvalidArgs) {
		t.Errorf("ActiveQueueStats(-1) = %v, want ErrInvalidArgs", err)
	}
	if _, err := c.Throughput(t.Context(), -time.Minute); !errors.Is(err, ErrInvalidArgs) {
		t.Errorf("Throughput(-1m) = %v, want ErrInvalidArgs", err)
	}
}

func TestOwnerEchoIsShort(t *testing.T) {
	err := validateOwner(strings.Repeat("o", 10240))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "… (10240 bytes)") || len(err.Error()) > 200 {
		t.Errorf("validateOwner of 10 KB = %q", err)
	}
}
