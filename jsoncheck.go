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
	if !json.Valid(data) {
		return "not valid JSON"
	}
	if data[0] != '{' {
		return "must be a JSON object"
	}
	return jsonProblem(data)
}

// jsonProblem says why valid JSON data cannot be stored as PostgreSQL
// jsonb, or returns "". encoding/json accepts all of these but jsonb
// refuses them: invalid UTF-8 in a string (which json.RawMessage passes
// through), the escape \u0000 (22P05; encoding/json writes it for a NUL in
// a Go string), an unpaired surrogate escape such as \ud800 (22P02), and a
// number beyond numeric's range (22003). It also refuses arrays and
// objects nested deeper than maxJSONDepth, which SQLite's json_valid
// refuses. Every driver refuses them all, so that a job accepted on one
// database would be accepted on the other too.
func jsonProblem(data []byte) string {
	depth := 0
	for i := 0; i < len(data); {
		switch c := data[i]; {
		case c == '{' || c == '[':
			if depth++; depth > maxJSONDepth {
				return fmt.Sprintf("nested deeper than %d arrays and objects at byte %d", maxJSONDepth, i)
			}
			i++
		case c == '}' || c == ']':
			depth--
			i++
		case c == '"':
			end, p := jsonStringProblem(data, i)
			if p != "" {
				return p
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end := i + 1
			for end < len(data) && isNumberByte(data[end]) {
				end++
			}
			if p := numberProblem(data[i:end]); p != "" {
				return fmt.Sprintf("number at byte %d %s", i, p)
			}
			i = end
		default:
			i++
		}
	}
	return ""
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

// numberProblem checks that the valid JSON number num fits PostgreSQL's
// numeric type: at most pgMaxIntDigits significant digits before the
// decimal point and pgMaxFracDigits after it, exponent applied.
func numberProblem(num []byte) string {
	i := 0
	if num[i] == '-' {
		i++
	}
	intStart := i
	for i < len(num) && num[i] >= '0' && num[i] <= '9' {
		i++
	}
	intLen := i - intStart
	mantissa := string(num[intStart:i])
	fracLen := 0
	if i < len(num) && num[i] == '.' {
		i++
		fracStart := i
		for i < len(num) && num[i] >= '0' && num[i] <= '9' {
			i++
		}
		fracLen = i - fracStart
		mantissa += string(num[fracStart:i])
	}
	exp := int64(0)
	if i < len(num) { // e or E
		e, err := strconv.ParseInt(string(num[i+1:]), 10, 32)
		if err != nil || e > 1e9 || e < -1e9 {
			return "has an exponent out of range"
		}
		exp = e
	}
	if int64(fracLen)-exp > pgMaxFracDigits {
		return fmt.Sprintf("has more than %d digits after the decimal point", pgMaxFracDigits)
	}
	lead := 0
	for lead < len(mantissa) && mantissa[lead] == '0' {
		lead++
	}
	if lead < len(mantissa) && int64(intLen-lead)+exp > pgMaxIntDigits {
		return fmt.Sprintf("has more than %d digits before the decimal point", pgMaxIntDigits)
	}
	return ""
}
