// Package jsonshow indents JSON for people to read, within a bound: a
// value nested deep enough (job arguments may nest 1,000 levels) would
// otherwise grow a thousandfold, indented. The dashboard's job page and the
// tool's --json output show JSON through it. UnescapeHTML turns back the
// escapes json.Marshal writes for <, > and &, for the job page.
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

// UnescapeHTML returns the JSON text src with the \u003c, \u003e and
// \u0026 escapes in its strings turned back into <, > and &: json.Marshal
// writes them for HTML's sake, so a value stored by it (SQLite keeps the
// text) reads differently from the same value given back by PostgreSQL's
// jsonb. The value is the same; the result is still JSON. An escaped
// backslash followed by u003c (a string holding the six characters) is
// kept, as are other \u escapes. It returns src itself when there is
// nothing to turn back. The result is not safe to put into HTML
// unescaped.
func UnescapeHTML(src []byte) []byte {
	if !bytes.Contains(src, []byte(`\u00`)) {
		return src
	}
	out := make([]byte, 0, len(src))
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\':
			if r, ok := htmlEscape(src[i+1:]); ok {
				out = append(out, r)
				i += 5
				continue
			}
			out = append(out, src[i:min(i+2, len(src))]...) // with the escaped byte
			i++
			continue
		}
		out = append(out, c)
	}
	return out
}

// htmlEscape returns the character of the escape json.Marshal writes for
// <, > or & when s starts with one (after its backslash: u003c, u003e or
// u0026, hex digits in either case).
func htmlEscape(s []byte) (byte, bool) {
	if len(s) < 5 || s[0] != 'u' || s[1] != '0' || s[2] != '0' {
		return 0, false
	}
	switch d := s[4] | 0x20; { // 0x20 lowers a letter, keeps a digit
	case s[3] == '3' && d == 'c':
		return '<', true
	case s[3] == '3' && d == 'e':
		return '>', true
	case s[3] == '2' && s[4] == '6':
		return '&', true
	}
	return 0, false
}
