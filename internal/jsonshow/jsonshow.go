// Package jsonshow indents JSON for people to read, within a bound: a
// value nested deep enough (job arguments may nest 1,000 levels) would
// otherwise grow a thousandfold, indented. The dashboard's job page and the
// tool's --json output show JSON through it.
package jsonshow

import (
	"bytes"
	"encoding/json"
)

// indentSlack is what indenting may add to a JSON value beyond
// maxIndentGrowth times its size: enough for any small value, however
// nested.
const indentSlack = 64 << 10

// maxIndentGrowth bounds, with indentSlack, the size of an indented JSON
// value relative to its source. Indenting by two spaces a level costs
// 1 + 2*depth bytes a line, so a deeply nested value would grow without
// useful bound (a 1 MiB value nested 1,000 deep indents to about 1 GB).
const maxIndentGrowth = 4

// Indent returns raw for display: indented two spaces a level when that
// keeps it within maxIndentGrowth*len(raw) + indentSlack bytes, else
// compacted, with flat set (it is nested too deep to indent); raw as it is
// when it is not valid JSON.
func Indent(raw []byte) (text []byte, flat bool) {
	var buf bytes.Buffer
	if indentedSize(raw, maxIndentGrowth*len(raw)+indentSlack) < 0 {
		if err := json.Compact(&buf, raw); err != nil {
			return raw, false
		}
		return buf.Bytes(), true
	}
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return raw, false
	}
	return buf.Bytes(), false
}

// indentedSize returns the size of json.Indent(src, "", "  ") for valid
// JSON src, in one pass over its bytes, or -1 as soon as it exceeds limit.
// It costs each structural line break 1 + 2*depth bytes and each colon
// the space after it, drops the white space between tokens, and keeps
// strings as they are; an empty object or array stays on its line, as
// json.Indent leaves it. For invalid JSON the result is only an estimate.
func indentedSize(src []byte, limit int) int {
	s := indentScan{}
	for _, c := range src {
		s.step(c)
		if s.size > limit {
			return -1
		}
	}
	return s.size
}

// indentScan is the state of indentedSize's pass.
type indentScan struct {
	// size is the indented size of the bytes read so far.
	size int
	// depth is the nesting depth outside strings.
	depth int
	// inString and escaped track a string and a backslash escape in it.
	inString, escaped bool
	// opened is set right after { or [, until the next token: an empty
	// object or array takes no line break.
	opened bool
}

// step reads the byte c of the source.
func (s *indentScan) step(c byte) {
	if s.inString {
		s.size++
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
		}
		return
	}
	if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
		return
	}
	s.token(c)
}

// token reads the byte c outside strings, not white space.
func (s *indentScan) token(c byte) {
	closer := c == '}' || c == ']'
	if s.opened && !closer {
		s.newline(s.depth)
	}
	if closer && !s.opened {
		s.newline(s.depth - 1)
	}
	s.opened = false
	s.size++
	switch c {
	case '{', '[':
		s.depth++
		s.opened = true
	case '}', ']':
		s.depth = max(s.depth-1, 0)
	case ',':
		s.newline(s.depth)
	case ':':
		s.size++
	case '"':
		s.inString = true
	}
}

// newline counts a line break indented depth levels.
func (s *indentScan) newline(depth int) {
	s.size += 1 + 2*max(depth, 0)
}
