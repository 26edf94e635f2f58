package web

import (
	"encoding/json"

	"github.com/leasehold/leasehold/internal/jsonshow"
)

// shownJSON is a JSON value as a page shows it.
type shownJSON struct {
	// Text is the value, indented two spaces a level, or compacted when
	// Flat is set.
	Text string
	// Flat is set when the value is shown unindented because it is nested
	// too deep to indent within jsonshow's bound.
	Flat bool
}

// pretty returns raw for display (jsonshow.Indent), with <, > and & shown
// as characters whichever database stored it (jsonshow.UnescapeHTML:
// SQLite keeps json.Marshal's \u003c escapes, PostgreSQL's jsonb does
// not); the template escapes it.
func pretty(raw json.RawMessage) shownJSON {
	text, flat := jsonshow.Indent(raw)
	return shownJSON{Text: string(jsonshow.UnescapeHTML(text)), Flat: flat}
}
