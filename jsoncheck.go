package leasehold

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Limits of PostgreSQL's numeric type, which stores jsonb numbers: a
// number with more digits before or after the decimal point is refused
// (SQLSTATE 22003).
const (
	pgMaxIntDigits  = 131072
	pgMaxFracDigits = 16383
)

// maxJSONDepth is the deepest nesting of arrays and objects SQLite's JSON
// functions accept (JSON_MAX_DEPTH), and so the deepest any driver stores.
const maxJSONDepth = 1000

// jsonObjectProblem says why data is not a JSON object that every driver
// stores, or returns "".
func jsonObjectProblem(data []byte) string {
	_, p := jsonObjectSize(data)
	return p
}

// jsonObjectSize checks data as jsonObjectProblem does and also returns
// its stored size (see jsonSize).
func jsonObjectSize(data []byte) (stored int64, problem string) {
	if !json.Valid(data) {
		return 0, "not valid JSON"
	}
	if data[0] != '{' {
		return 0, "must be a JSON object"
	}
	return jsonSize(data)
}

// jsonSize says why valid JSON data cannot be stored as PostgreSQL jsonb
// (problem), or returns its stored size. encoding/json accepts all of
// these problems but jsonb refuses them: invalid UTF-8 in a string (which
// json.RawMessage passes through), the escape \u0000 (22P05;
// encoding/json writes it for a NUL in a Go string), an unpaired
// surrogate escape such as \ud800 (22P02), and a number beyond numeric's
// range (22003). It also refuses arrays and objects nested deeper than
// maxJSONDepth, which SQLite's json_valid refuses. Every driver refuses
// them all, so that a job accepted on one database would be accepted on
// the other too.
//
// The stored size is the data's length with every number counted as
// PostgreSQL's jsonb gives it back, written out in full (see
// jsonNumber.writtenLen), where that is longer than the literal. A
// payload limit applied to this size bounds what every driver stores and
// returns: 1e131071 is 8 bytes of JSON but 131,072 digits in jsonb, and a
// few thousand such numbers make a job PostgreSQL cannot even read back.
func jsonSize(data []byte) (stored int64, problem string) {
	stored = int64(len(data))
	depth := 0
	for i := 0; i < len(data); {
		switch c := data[i]; {
		case c == '{' || c == '[':
			if depth++; depth > maxJSONDepth {
				return 0, fmt.Sprintf("nested deeper than %d arrays and objects at byte %d", maxJSONDepth, i)
			}
			i++
		case c == '}' || c == ']':
			depth--
			i++
		case c == '"':
			end, p := jsonStringProblem(data, i)
			if p != "" {
				return 0, p
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end := i + 1
			for end < len(data) && isNumberByte(data[end]) {
				end++
			}
			n := parseNumber(data[i:end])
			if p := n.problem(); p != "" {
				return 0, fmt.Sprintf("number at byte %d %s", i, p)
			}
			stored += max(n.writtenLen()-int64(end-i), 0)
			i = end
		default:
			i++
		}
	}
	return stored, ""
}

func isNumberByte(b byte) bool {
	return b >= '0' && b <= '9' || b == '.' || b == 'e' || b == 'E' || b == '+' || b == '-'
}

// jsonStringProblem checks the valid JSON string that starts with the
// quote at data[start], and returns the offset after its closing quote.
func jsonStringProblem(data []byte, start int) (end int, problem string) {
	for i := start + 1; i < len(data); {
		switch c := data[i]; {
		case c == '"':
			return i + 1, ""
		case c == '\\' && data[i+1] == 'u':
			n, p := unicodeEscapeProblem(data, i)
			if p != "" {
				return 0, fmt.Sprintf("%s at byte %d", p, i)
			}
			i += n
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, fmt.Sprintf("invalid UTF-8 in a string at byte %d", i)
			}
			i += size
		}
	}
	return len(data), ""
}

// unicodeEscapeProblem checks the \uXXXX escape at data[i] and returns its
// length: 6, or 12 for a surrogate pair.
func unicodeEscapeProblem(data []byte, i int) (n int, problem string) {
	u := hex4(data[i+2:])
	switch {
	case u == 0:
		return 0, `\u0000 (NUL) in a string`
	case u >= 0xDC00 && u <= 0xDFFF:
		return 0, fmt.Sprintf(`unpaired surrogate \u%04x in a string`, u)
	case u < 0xD800 || u > 0xDFFF:
		return 6, ""
	}
	if i+12 <= len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
		if low := hex4(data[i+8:]); low >= 0xDC00 && low <= 0xDFFF {
			return 12, ""
		}
	}
	return 0, fmt.Sprintf(`unpaired surrogate \u%04x in a string`, u)
}

// hex4 decodes four hex digits, or returns -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return int(v)
}

// jsonNumber is a valid JSON number literal taken apart.
type jsonNumber struct {
	neg     bool  // a minus sign
	sig     int   // digits of the mantissa, without leading zeros: 0 for zero
	fracLen int   // digits after the literal's decimal point
	exp     int64 // the exponent, 0 when none
	badExp  bool  // an exponent beyond ±1e9, far outside numeric's range
}

// parseNumber takes the valid JSON number num apart.
func parseNumber(num []byte) jsonNumber {
	var n jsonNumber
	i := 0
	if num[i] == '-' {
		n.neg = true
		i++
	}
	intStart := i
	for i < len(num) && num[i] >= '0' && num[i] <= '9' {
		i++
	}
	mantissa := string(num[intStart:i])
	if i < len(num) && num[i] == '.' {
		i++
		fracStart := i
		for i < len(num) && num[i] >= '0' && num[i] <= '9' {
			i++
		}
		n.fracLen = i - fracStart
		mantissa += string(num[fracStart:i])
	}
	lead := 0
	for lead < len(mantissa) && mantissa[lead] == '0' {
		lead++
	}
	n.sig = len(mantissa) - lead
	if i < len(num) { // e or E
		e, err := strconv.ParseInt(string(num[i+1:]), 10, 32)
		n.exp, n.badExp = e, err != nil || e > 1e9 || e < -1e9
	}
	return n
}

// intDigits returns the number of digits before the decimal point, the
// exponent applied: 0 for a number below 1 in magnitude.
func (n jsonNumber) intDigits() int64 {
	if n.sig == 0 {
		return 0
	}
	return max(int64(n.sig)+n.exp-int64(n.fracLen), 0)
}

// scale returns the number of digits after the decimal point that
// PostgreSQL's numeric keeps (its display scale): the literal's, less the
// exponent, trailing zeros included.
func (n jsonNumber) scale() int64 {
	return max(int64(n.fracLen)-n.exp, 0)
}

// problem says why n does not fit PostgreSQL's numeric type, or returns
// "": at most pgMaxIntDigits digits before the decimal point and
// pgMaxFracDigits after it, exponent applied.
func (n jsonNumber) problem() string {
	switch {
	case n.badExp:
		return "has an exponent out of range"
	case n.scale() > pgMaxFracDigits:
		return fmt.Sprintf("has more than %d digits after the decimal point", pgMaxFracDigits)
	case n.intDigits() > pgMaxIntDigits:
		return fmt.Sprintf("has more than %d digits before the decimal point", pgMaxIntDigits)
	}
	return ""
}

// writtenLen returns the length of n as PostgreSQL's numeric output
// writes it, which is how jsonb gives numbers back: without an exponent,
// a minus sign unless n is zero, at least one digit before the point, and
// the point followed by scale digits when scale is positive. 1.5e3 is
// "1500", 123.45e-10 is "0.000000012345", 1.50 stays "1.50", -0.0 is
// "0.0" and 1e131071 is a 1 and 131,071 zeros. n must fit numeric.
func (n jsonNumber) writtenLen() int64 {
	size := max(n.intDigits(), 1)
	if n.neg && n.sig > 0 {
		size++
	}
	if s := n.scale(); s > 0 {
		size += 1 + s
	}
	return size
}
