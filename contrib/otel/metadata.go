package leaseholdotel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// quotedKey is MetadataKey as a JSON string, for a cheap look before any
// decoding.
var quotedKey = []byte(`"` + MetadataKey + `"`)

// errNotObject reports metadata that is not a JSON object, which the
// client refuses before middleware sees it.
var errNotObject = errors.New("not a JSON object")

// sampledOutMark is what a job inserted under a sampled-out span carries
// without Options.CarrySampledOut: no field, which says that the trace
// was sampled out where the job was inserted.
var sampledOutMark = []byte(`{}`)

// encodeContext returns the propagator's fields for the trace context of
// ctx as a JSON object, nil when there is none: sampledOutMark for a
// sampled-out one, unless carrySampledOut or the propagator has more
// than the trace context to carry (baggage), which the handler is owed
// whether the trace was sampled or not.
func (t *Tracer) encodeContext(ctx context.Context) []byte {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsSampled() && !t.carrySampledOut && !t.carriesMore(ctx) {
		return sampledOutMark
	}
	var c jsonCarrier
	t.prop.Inject(ctx, &c)
	return c.object()
}

// carriesMore reports whether the propagator writes any field for ctx
// without its span context: baggage, say. It asks only a propagator with
// fields beyond the W3C trace context's.
func (t *Tracer) carriesMore(ctx context.Context) bool {
	if t.traceOnly {
		return false
	}
	var c jsonCarrier
	t.prop.Inject(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), &c)
	return len(c.keys) > 0
}

// traceOnly reports whether every field of prop is one of the W3C trace
// context's (traceparent, tracestate), which it writes only for a span
// context: the fields of propagation.TraceContext, the default.
func traceOnly(prop propagation.TextMapPropagator) bool {
	w3c := propagation.TraceContext{}.Fields()
	for _, f := range prop.Fields() {
		if !slices.Contains(w3c, f) {
			return false
		}
	}
	return true
}

// jsonCarrier is a propagation.TextMapCarrier that writes the fields it
// is given as the members of a JSON object, in the order set, without a
// map: a trace context is one or two fields.
type jsonCarrier struct {
	keys, values []string
}

// Get returns the value set for key.
func (c *jsonCarrier) Get(key string) string {
	if i := slices.Index(c.keys, key); i >= 0 {
		return c.values[i]
	}
	return ""
}

// Set sets key to value, replacing a value set before.
func (c *jsonCarrier) Set(key, value string) {
	if i := slices.Index(c.keys, key); i >= 0 {
		c.values[i] = value
		return
	}
	c.keys, c.values = append(c.keys, key), append(c.values, value)
}

// Keys returns the keys set.
func (c *jsonCarrier) Keys() []string { return c.keys }

// object returns the fields as a JSON object, nil when there are none.
func (c *jsonCarrier) object() []byte {
	if len(c.keys) == 0 {
		return nil
	}
	n := 2
	for i := range c.keys {
		n += len(c.keys[i]) + len(c.values[i]) + 6
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i := range c.keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendString(out, c.keys[i])
		out = append(out, ':')
		out = appendString(out, c.values[i])
	}
	return append(out, '}')
}

// appendString appends s to out as a JSON string: as it is when it is
// printable ASCII without a quote or a backslash (a trace context's
// fields always are), else encoded by encoding/json.
func appendString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(out, enc...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

// withCarrier returns metadata md (a JSON object, or empty) with
// MetadataKey set to enc, in a new slice: md is the caller's. The other
// keys are kept as they are; an existing MetadataKey is replaced.
func withCarrier(md json.RawMessage, enc []byte) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(md)
	if len(trimmed) == 0 {
		return joinObject(nil, enc), nil
	}
	if trimmed[0] != '{' || trimmed[len(trimmed)-1] != '}' {
		return nil, errNotObject
	}
	if !bytes.Contains(trimmed, quotedKey) {
		return joinObject(trimmed[:len(trimmed)-1], enc), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil, err
	}
	obj[MetadataKey] = enc
	return json.Marshal(obj)
}

// joinObject returns the object whose start (an object's text without
// its closing brace, nil for an empty object) is given, with MetadataKey
// set to enc appended.
func joinObject(start, enc []byte) json.RawMessage {
	start = bytes.TrimRight(start, " \t\r\n")
	out := make([]byte, 0, len(start)+len(quotedKey)+len(enc)+4)
	if len(start) == 0 {
		out = append(out, '{')
	} else {
		out = append(out, start...)
		if start[len(start)-1] != '{' {
			out = append(out, ',')
		}
	}
	out = append(out, quotedKey...)
	out = append(out, ':')
	out = append(out, enc...)
	return append(out, '}')
}

// carriage is what a job's metadata carries of the trace it was inserted
// in.
type carriage int

const (
	carriesNothing carriage = iota // no trace context: not inserted by the middleware
	carriesMark                    // sampledOutMark: inserted under a sampled-out span
	carriesContext                 // the propagator's fields
)

// extract returns ctx with the trace context carried in metadata md, and
// what md carries.
func (t *Tracer) extract(ctx context.Context, md json.RawMessage) (context.Context, carriage) {
	if !bytes.Contains(md, quotedKey) {
		return ctx, carriesNothing
	}
	f := carriedFields(md)
	switch {
	case f == nil:
		return ctx, carriesNothing
	case f.empty():
		return ctx, carriesMark
	}
	return t.prop.Extract(ctx, f), carriesContext
}
