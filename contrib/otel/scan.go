package leaseholdotel

import (
	"bytes"
	"encoding/json"
)

// fields is a propagation.TextMapCarrier on a few pairs, read from a
// job's metadata without a map or reflection.
type fields []field

// field is one propagator field, its text in the metadata.
type field struct{ key, value []byte }

// Get returns the value of key (its last, as encoding/json reads a
// repeated key), empty when absent.
func (f fields) Get(key string) string {
	for i := len(f) - 1; i >= 0; i-- {
		if string(f[i].key) == key {
			return string(f[i].value)
		}
	}
	return ""
}

// Set is not used: fields are only read.
func (f fields) Set(string, string) {}

// Keys returns the keys held.
func (f fields) Keys() []string {
	keys := make([]string, len(f))
	for i, p := range f {
		keys[i] = string(p.key)
	}
	return keys
}

// carriedFields returns the fields under MetadataKey of the JSON object
// md (its last such key, as encoding/json and PostgreSQL's jsonb read
// it), nil when there are none. It walks md once and decodes only the
// carried object; a carried object with escaped text or non-string
// values is decoded by encoding/json instead.
func carriedFields(md []byte) fields {
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
func decodeFields(v []byte) fields {
	s := scanner{b: v}
	if !s.eat('{') {
		return nil
	}
	out := make(fields, 0, 2)
	for !s.eat('}') {
		key, plainKey, ok := s.str()
		if !ok || !s.eat(':') {
			return nil
		}
		val, plainVal, ok := s.str()
		if !ok || !plainKey || !plainVal {
			return decodeFieldsJSON(v)
		}
		out = append(out, field{key, val})
		if !s.eat(',') && s.peek() != '}' {
			return nil
		}
	}
	return out
}

// decodeFieldsJSON decodes the carried object v with encoding/json.
func decodeFieldsJSON(v []byte) fields {
	var m map[string]string
	if json.Unmarshal(v, &m) != nil {
		return nil
	}
	out := make(fields, 0, len(m))
	for k, val := range m {
		out = append(out, field{[]byte(k), []byte(val)})
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
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.i++
			return s.b[start : s.i-1], plain, true
		case '\\':
			plain = false
			s.i++
		}
		s.i++
	}
	return nil, false, false
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
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if _, _, ok := s.str(); !ok {
				return false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return true
			}
		}
		s.i++
	}
	return false
}
