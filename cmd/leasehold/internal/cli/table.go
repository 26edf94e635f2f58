package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/leasehold/leasehold/internal/jsonshow"
)

// WriteJSON writes v as indented JSON followed by a newline; the whole
// output compacted when it holds a value nested too deep to indent within
// jsonshow's bound (job arguments may nest 1,000 levels: indented, a job
// of a few hundred KB would print hundreds of MB).
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil { // HTML-escaped, as before
		return fmt.Errorf("write JSON: %w", err)
	}
	text, _ := jsonshow.Indent(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	if _, err := w.Write(append(text, '\n')); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// Table writes aligned columns.
type Table struct {
	tw *tabwriter.Writer
}

// NewTable starts a table with the given column headers (none for a
// table without a header row).
func NewTable(w io.Writer, headers ...string) *Table {
	t := &Table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(headers) > 0 {
		t.Row(headers...)
	}
	return t
}

// Row adds a row; cells are flattened to one line.
func (t *Table) Row(cells ...string) {
	for i, c := range cells {
		cells[i] = oneLine(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// Flush writes the table out.
func (t *Table) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// oneLine is Printable, with an empty cell shown as "-".
func oneLine(s string) string {
	if s == "" {
		return "-"
	}
	return Printable(s)
}

// Printable replaces tabs and line breaks, which would break a table's
// columns or a one-line message, with spaces, and shows other control
// characters as escapes (\x1b), so that text from a job (its error, its
// args) or from the command line cannot move the cursor, clear the screen
// or retitle the operator's terminal.
func Printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t' || r == '\r' || r == '\n':
			b.WriteByte(' ')
		case unicode.IsControl(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Truncate shortens s to n runes, marking the cut with "…".
func Truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Relative renders t relative to now: "in 5m", "12s ago", "now".
func Relative(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now)
	switch {
	case d > -50*time.Millisecond && d < 50*time.Millisecond:
		return "now"
	case d > 0:
		return "in " + FormatDuration(d)
	default:
		return FormatDuration(-d) + " ago"
	}
}

// Timestamp renders t in UTC to the millisecond, or "-" when zero.
func Timestamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}
