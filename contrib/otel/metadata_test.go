package leaseholdotel

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

const testCarrier = `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`

func TestWithCarrier(t *testing.T) {
	for _, tc := range []struct{ md, want string }{
		{``, `{"otel":` + testCarrier + `}`},
		{`{}`, `{"otel":` + testCarrier + `}`},
		{`{ }`, `{"otel":` + testCarrier + `}`},
		{`{"a":1}`, `{"a":1,"otel":` + testCarrier + `}`},
		{`{"a":1 }`, `{"a":1,"otel":` + testCarrier + `}`},
		{`{"otel":"old","a":1}`, `{"a":1,"otel":` + testCarrier + `}`},
		{`{"a":"otel"}`, `{"a":"otel","otel":` + testCarrier + `}`},
	} {
		md := json.RawMessage(tc.md)
		orig := bytes.Clone(md)
		got, err := withCarrier(md, []byte(testCarrier))
		if err != nil {
			t.Errorf("withCarrier(%s): %v", tc.md, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("withCarrier(%s) = %s, want %s", tc.md, got, tc.want)
		}
		if !bytes.Equal(md, orig) {
			t.Errorf("withCarrier changed its input to %s", md)
		}
	}
	if _, err := withCarrier(json.RawMessage(`[1]`), []byte(testCarrier)); err == nil {
		t.Error("withCarrier accepted an array")
	}
}

// FuzzWithCarrier checks that for any JSON object, withCarrier returns a
// JSON object with every other key unchanged and the carrier under
// MetadataKey.
func FuzzWithCarrier(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"otel":{"x":"y"},"b":[1,"otel"]}`, "{\n}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		var in map[string]json.RawMessage
		if json.Unmarshal([]byte(md), &in) != nil || in == nil || md[0] != '{' || md[len(md)-1] != '}' {
			t.Skip()
		}
		got, err := withCarrier(json.RawMessage(md), []byte(testCarrier))
		if err != nil {
			t.Fatalf("withCarrier(%s): %v", md, err)
		}
		var out map[string]any
		if err := json.Unmarshal(got, &out); err != nil {
			t.Fatalf("withCarrier(%s) = %s: %v", md, got, err)
		}
		var want map[string]any
		_ = json.Unmarshal([]byte(md), &want)
		var c any
		_ = json.Unmarshal([]byte(testCarrier), &c)
		want[MetadataKey] = c
		if !reflect.DeepEqual(out, want) {
			t.Fatalf("withCarrier(%s) = %s", md, got)
		}
	})
}

func TestCarriedFields(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct{ md, traceparent, tracestate string }{
		{`{"otel":{"traceparent":"` + tp + `"}}`, tp, ""},
		// as PostgreSQL's jsonb prints it: spaces, keys reordered
		{`{"a": [1, {"b": "}"}], "otel": {"tracestate": "k=v", "traceparent": "` + tp + `"}, "z": null}`, tp, "k=v"},
		{`{"x": "\"otel\": {", "n": -1.5e3, "t": true, "otel": {"traceparent": "` + tp + `"}}`, tp, ""},
		{`{"otel": {"traceparent": "` + tp + `", "tracestate": "k=\u0076"}}`, tp, "k=v"}, // escaped: decoded by encoding/json
		{`{"nested": {"otel": {"traceparent": "` + tp + `"}}}`, "", ""},                  // not at the top level
		{`{"otel": "` + tp + `"}`, "", ""},
		{`{"otel": {"traceparent": 1}}`, "", ""},
		{`{}`, "", ""},
		{``, "", ""},
		{`{"otel": {"traceparent": "` + tp + `"`, "", ""}, // truncated
	} {
		f := carriedFields([]byte(tc.md))
		if got := f.Get("traceparent"); got != tc.traceparent {
			t.Errorf("%s: traceparent %q, want %q", tc.md, got, tc.traceparent)
		}
		if got := f.Get("tracestate"); got != tc.tracestate {
			t.Errorf("%s: tracestate %q, want %q", tc.md, got, tc.tracestate)
		}
	}
}

// FuzzCarriedFields checks carriedFields against encoding/json on any
// JSON object in UTF-8 (the client refuses metadata that is not).
func FuzzCarriedFields(f *testing.F) {
	for _, s := range []string{
		`{"otel":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`,
		`{"a": [1, {"b": "}"}], "otel": {"tracestate": "k=v", "traceparent": "x"}, "z": null}`,
		`{"otel": {"a": "\u0076"}, "otel": {"b": "c"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		var obj map[string]json.RawMessage
		if !utf8.ValidString(md) || json.Unmarshal([]byte(md), &obj) != nil || obj == nil {
			t.Skip()
		}
		var want map[string]string
		if raw, ok := obj[MetadataKey]; ok {
			_ = json.Unmarshal(raw, &want)
		}
		got := carriedFields([]byte(md))
		for _, k := range got.Keys() {
			if _, ok := want[k]; !ok {
				t.Fatalf("carriedFields(%s) holds %q, want %v", md, k, want)
			}
		}
		for k, v := range want {
			if got.Get(k) != v {
				t.Fatalf("carriedFields(%s)[%q] = %q, want %q", md, k, got.Get(k), v)
			}
		}
	})
}

func TestJSONCarrier(t *testing.T) {
	var c jsonCarrier
	if c.object() != nil {
		t.Errorf("empty carrier encodes %s, want nothing", c.object())
	}
	want := map[string]string{
		"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"tracestate":  `k=v,q="\"`,
		"baggage":     "é\n\x00<>&",
	}
	c.Set("traceparent", "replaced below")
	for _, k := range []string{"traceparent", "tracestate", "baggage"} {
		c.Set(k, want[k])
	}
	if len(c.Keys()) != 3 || c.Get("traceparent") != want["traceparent"] || c.Get("absent") != "" {
		t.Errorf("carrier holds %v / %v", c.keys, c.values)
	}
	var got map[string]string
	if err := json.Unmarshal(c.object(), &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("carrier encodes %s (%v), want %v", c.object(), err, want)
	}
}
