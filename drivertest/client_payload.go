package drivertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/leasehold/leasehold"
)

// payloadLimit is the MaxPayloadBytes of testPayloadWrittenOut's client.
const payloadLimit = 4096

// testPayloadWrittenOut: MaxPayloadBytes bounds arguments and metadata
// with their numbers written out as PostgreSQL's jsonb stores and returns
// them (1e5000 is 6 bytes of JSON and 5,001 digits in jsonb), identically
// on every driver. A payload that passes the limit only once written out
// is refused with ErrPayloadTooLarge by Insert, InsertMany and InsertBulk
// and leaves no job, among them the default limit's 130 KB of 1e131071s,
// which PostgreSQL could neither return nor claim; one that fits written
// out is stored and reads back as the same numbers, within the limit.
func testPayloadWrittenOut(e *clientEnv) {
	c := e.newClient(e.d, nil, func(cfg *leasehold.Config) { cfg.MaxPayloadBytes = payloadLimit })
	ok := raw("test", `{}`)
	overLimit := `{"n":1e5000}`
	refused := []badInput{
		{"ArgsWrittenOutOverLimit", raw("test", overLimit), nil, "args", leasehold.ErrPayloadTooLarge},
		{"NegativeExponentsOverLimit", raw("test", `{"a":1e-3000,"b":-1.5e-3000}`), nil, "args", leasehold.ErrPayloadTooLarge},
		{"MetadataWrittenOutOverLimit", ok, &leasehold.InsertOpts{Metadata: json.RawMessage(overLimit)}, "metadata", leasehold.ErrPayloadTooLarge},
	}
	good := leasehold.InsertManyParams{Args: testArgs{N: 1}}
	for _, b := range refused {
		e.Run(b.name, func(t *testing.T) {
			bad := leasehold.InsertManyParams{Args: b.args, Opts: b.opts}
			_, err := c.Insert(e.ctx, b.args, b.opts)
			checkBadInput(t, "Insert", err, b, -1)
			_, err = c.InsertMany(e.ctx, nil, []leasehold.InsertManyParams{good, bad})
			checkBadInput(t, "InsertMany", err, b, 1)
			n, err := c.InsertBulk(e.ctx, []leasehold.InsertManyParams{good, good, bad})
			checkBadInput(t, "InsertBulk", err, b, 2)
			if n != 0 {
				t.Errorf("InsertBulk reported %d jobs inserted, want 0", n)
			}
		})
	}
	e.Run("DefaultLimit", func(t *testing.T) { checkDefaultLimitWrittenOut(t, e) })
	if rows, err := e.d.ListJobs(e.ctx, &leasehold.ListParams{}); err != nil || len(rows) != 0 {
		e.Fatalf("after refused inserts: %d jobs (%v), want none", len(rows), err)
	}
	e.Run("FitsWrittenOut", func(t *testing.T) { checkFitsWrittenOut(t, e, c) })
}

// checkDefaultLimitWrittenOut: 8,200 copies of 1e131071, 130 KB of JSON
// and over a gigabyte written out, are refused under the default limit.
func checkDefaultLimitWrittenOut(t *testing.T, e *clientEnv) {
	c := e.newClient(e.d, nil, nil)
	var js strings.Builder
	js.WriteString("{")
	for i := range 8200 {
		if i > 0 {
			js.WriteString(",")
		}
		fmt.Fprintf(&js, `"%d":1e131071`, i)
	}
	js.WriteString("}")
	if js.Len() > leasehold.DefaultMaxPayloadBytes {
		t.Fatalf("%d bytes of JSON: want them under the default limit", js.Len())
	}
	b := badInput{args: raw("test", js.String()), field: "args", is: leasehold.ErrPayloadTooLarge}
	_, err := c.Insert(e.ctx, b.args, nil)
	checkBadInput(t, "Insert", err, b, -1)
	_, err = c.InsertBulk(e.ctx, []leasehold.InsertManyParams{{Args: b.args}})
	checkBadInput(t, "InsertBulk", err, b, 0)
}

// checkFitsWrittenOut: arguments and metadata that fit the limit written
// out are stored by Insert and InsertBulk and read back as the numbers
// inserted, within the limit.
func checkFitsWrittenOut(t *testing.T, e *clientEnv, c *leasehold.Client) {
	js := `{"n":1e4000,"f":1e-50,"m":-1.50}`
	want := map[string]string{"n": "1e4000", "f": "1e-50", "m": "-1.50"}
	opts := &leasehold.InsertOpts{Metadata: json.RawMessage(js)}
	if _, err := c.Insert(e.ctx, raw("test", js), opts); err != nil {
		t.Fatalf("Insert of args and metadata that fit written out: %v", err)
	}
	if n, err := c.InsertBulk(e.ctx, []leasehold.InsertManyParams{{Args: raw("test", js), Opts: opts}}); err != nil || n != 1 {
		t.Fatalf("InsertBulk of args and metadata that fit written out: %d, %v", n, err)
	}
	rows, err := e.d.ListJobs(e.ctx, &leasehold.ListParams{})
	if err != nil || len(rows) != 2 {
		t.Fatalf("ListJobs: %d jobs (%v), want 2", len(rows), err)
	}
	for _, listed := range rows {
		row, err := e.d.GetJob(e.ctx, listed.ID)
		if err != nil {
			t.Fatalf("GetJob: %v", err)
		}
		for field, data := range map[string]json.RawMessage{"args": row.Args, "metadata": row.Metadata} {
			if len(data) > payloadLimit {
				t.Errorf("job %d: %s read back in %d bytes, over the limit %d", row.ID, field, len(data), payloadLimit)
			}
			checkSameNumbers(t, fmt.Sprintf("job %d %s", row.ID, field), data, want)
		}
	}
}

// checkSameNumbers checks that the JSON object data holds the numbers
// want (as literals), however the driver writes them.
func checkSameNumbers(t *testing.T, what string, data []byte, want map[string]string) {
	t.Helper()
	var got map[string]json.Number
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil || len(got) != len(want) {
		t.Errorf("%s: %.80s (%v), want the numbers %v", what, data, err, want)
		return
	}
	for k, lit := range want {
		g, okG := new(big.Rat).SetString(string(got[k]))
		w, _ := new(big.Rat).SetString(lit)
		if !okG || g.Cmp(w) != 0 {
			t.Errorf("%s: %s is %.40s, want %s", what, k, got[k], lit)
		}
	}
}
