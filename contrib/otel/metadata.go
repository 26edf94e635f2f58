package leaseholdotel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"go.opentelemetry.io/otel/propagation"
)

// quotedKey is MetadataKey as a JSON string, for a cheap look before any
// decoding.
var quotedKey = []byte(`"` + MetadataKey + `"`)

// errNotObject reports metadata that is not a JSON object, which the
// client refuses before middleware sees it.
var errNotObject = errors.New("not a JSON object")

// encodeContext returns the propagator's fields for the trace context of
// ctx as a JSON object, nil when there is none.
func (t *Tracer) encodeContext(ctx context.Context) []byte {
	carrier := propagation.MapCarrier{}
	t.prop.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil
	}
	enc, err := json.Marshal(carrier)
	if err != nil {
		return nil // a map of strings always encodes
	}
	return enc
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

// extract returns ctx with the trace context carried in metadata md, and
// whether there was one.
func (t *Tracer) extract(ctx context.Context, md json.RawMessage) (context.Context, bool) {
	if !bytes.Contains(md, quotedKey) {
		return ctx, false
	}
	f := carriedFields(md)
	if len(f) == 0 {
		return ctx, false
	}
	return t.prop.Extract(ctx, f), true
}
