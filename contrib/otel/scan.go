package leaseholdotel

import (
	"bytes"
	"encoding/json"
)

// fields is a propagation.TextMapCarrier on a few pairs, read from a
// job's metadata without a map or reflection. The pairs of a trace
// context (traceparent and tracestate) fit in buf, so that reading them
// allocates fields alone.
type fields struct {
	list []field
	buf  [2]field
}

// field is one propagator field, its text in the metadata.
type field struct{ key, value []byte }

func newFields() *fields {
	f := &fields{}
	f.list = f.buf[:0]
	return f
}

// Get returns the value of key (its last, as encoding/json reads a
// repeated key), empty when absent or when f is nil.
func (f *fields) Get(key string) string {
	if f == nil {
		return ""
	}
	for i := len(f.list) - 1; i >= 0; i-- {
		if string(f.list[i].key) == key {
			return string(f.list[i].value)
		}
	}
	return ""
}

// Set is not used: fields are only read.
func (f *fields) Set(string, string) {}

// Keys returns the keys held.
func (f *fields) Keys() []string {
	if f == nil {
		return nil
	}
	keys := make([]string, len(f.list))
	for i, p := range f.list {
		keys[i] = string(p.key)
	}
	return keys
}

// empty reports whether f holds no field.
func (f *fields) empty() bool { return f == nil || len(f.list) == 0 }

// carriedFields returns the fields under MetadataKey of the JSON object
// md (its last such key, as encoding/json and PostgreSQL's jsonb read
// it), nil when there are none. It walks md once and decodes only the
// carried object; a carried object with escaped text or non-string
// values is decoded by encoding/json instead.
func carriedFields(md []byte) *fields {
	s := scanner{b: md}
	if !s.eat('{') {
		return nil
	}
	var carried []byte
	for !s.eat('}') {
		key, plain, ok := s.str()
		if !ok || !s.eat(':') {
			return nil
		}
		start := s.skipWS()
		if !s.value() {
			return nil
		}
		if plain && string(key) == MetadataKey {
			carried = md[start:s.i]
		}
		if !s.eat(',') && s.peek() != '}' {
			return nil
		}
	}
	if carried == nil {
		return nil
	}
	return decodeFields(carried)
}

// decodeFields decodes the carried object v: flat string pairs are read
// directly, anything else through encoding/json.
func decodeFields(v []byte) *fields {
	s := scanner{b: v}
	if !s.eat('{') {
		return nil
	}
	out := newFields()
	for !s.eat('}') {
		key, plainKey, ok := s.str()
		if !ok || !s.eat(':') {
			return nil
		}
		val, plainVal, ok := s.str()
		if !ok || !plainKey || !plainVal {
			return decodeFieldsJSON(v)
		}
		out.list = append(out.list, field{key, val})
		if !s.eat(',') && s.peek() != '}' {
			return nil
		}
	}
	return out
}

// decodeFieldsJSON decodes the carried object v with encoding/json,
// keeping its string fields when others are not strings.
func decodeFieldsJSON(v []byte) *fields {
	var m map[string]string
	if err := json.Unmarshal(v, &m); err != nil && !is[*json.UnmarshalTypeError](err) {
		return nil
	}
	out := newFields()
	for k, val := range m {
		out.list = append(out.list, field{[]byte(k), []byte(val)})
	}
	return out
}

// scanner walks JSON text that encoding/json would accept; on text it
// would not, its methods report failure rather than guess.
type scanner struct {
	b []byte
	i int
}

// skipWS skips white space and returns the position reached.
func (s *scanner) skipWS() int {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
	return s.i
}

// peek returns the next byte after white space, 0 at the end.
func (s *scanner) peek() byte {
	if s.skipWS() == len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// eat consumes c after white space, if it is next.
func (s *scanner) eat(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

// str consumes a string after white space and returns its text between
// the quotes, and whether that text holds no escape (and so is the
// string's value).
func (s *scanner) str() (text []byte, plain, ok bool) {
	if !s.eat('"') {
		return nil, false, false
	}
	start, plain := s.i, true
	for {
		q := bytes.IndexByte(s.b[s.i:], '"')
		if q < 0 {
			return nil, false, false
		}
		esc := bytes.IndexByte(s.b[s.i:s.i+q], '\\')
		if esc < 0 {
			s.i += q + 1
			return s.b[start : s.i-1], plain, true
		}
		plain = false
		s.i += esc + 2 // the backslash and the byte it escapes
		if s.i > len(s.b) {
			return nil, false, false
		}
	}
}

// value consumes one value of any type.
func (s *scanner) value() bool {
	switch s.peek() {
	case '"':
		_, _, ok := s.str()
		return ok
	case '{', '[':
		return s.nested()
	case 0:
		return false
	}
	end := bytes.IndexAny(s.b[s.i:], ",}] \t\r\n")
	if end <= 0 {
		return false
	}
	s.i += end
	return true
}

// nested consumes an object or an array, whatever it holds.
func (s *scanner) nested() bool {
	depth := 0
	for {
		n := bytes.IndexAny(s.b[s.i:], `"{}[]`)
		if n < 0 {
			return false
		}
		s.i += n
		switch s.b[s.i] {
		case '"':
			if _, _, ok := s.str(); !ok {
				return false
			}
			continue
		case '{', '[':
			depth++
		default:
			depth--
			if depth == 0 {
				s.i++
				return true
			}
		}
		s.i++
	}
}
