package leasehold

import (
	"strings"
	"unicode/utf8"
)

// MaxErrorText bounds the error text stored with an attempt and as the
// job's last error, in bytes; a longer message (a deep panic stack, say)
// keeps its beginning and ends in "… (truncated)", within the bound.
const MaxErrorText = 16 << 10

// truncatedMark ends an error text cut to MaxErrorText.
const truncatedMark = "… (truncated)"

// errorText returns a handler's error message as the database can store
// it: valid UTF-8 without NUL bytes (PostgreSQL's text type refuses both;
// each becomes U+FFFD), at most MaxErrorText bytes. Stored raw, such a
// message would make the database refuse the whole batch of outcomes it
// is written with, again at every retry.
func errorText(err error) string {
	s := strings.ToValidUTF8(err.Error(), "\uFFFD")
	return boundText(strings.ReplaceAll(s, "\x00", "\uFFFD"))
}

// boundText returns s, valid UTF-8, cut to at most MaxErrorText bytes,
// the mark that it was cut included.
func boundText(s string) string {
	if len(s) <= MaxErrorText {
		return s
	}
	cut := MaxErrorText - len(truncatedMark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncatedMark
}
