package pgdriver

import (
	"fmt"
	"sync"
)

// maxNames bounds a names table: past it, values are allocated as usual.
const maxNames = 4096

// names interns the short text values that repeat from row to row (kind,
// queue, status, owner), so that a claim of 500 jobs does not allocate
// 2,000 copies of the same few strings. Each driver has its own table.
type names struct {
	mu sync.Mutex
	m  map[string]string
}

// intern returns b as a string, shared with earlier equal values.
func (n *names) intern(b []byte) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.m[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if n.m == nil {
		n.m = make(map[string]string)
	}
	if len(n.m) < maxNames && len(s) <= 256 {
		n.m[s] = s
	}
	return s
}

// nameDest scans a text column into a string through a names table. pgx
// hands it the row's bytes without copying them (ScanBytes);
// database/sql hands it a string or bytes (Scan).
type nameDest struct {
	tab *names
	s   *string
}

// ScanBytes implements pgtype.BytesScanner. b is valid only until the next
// row, so it is interned (copied) at once.
func (d nameDest) ScanBytes(b []byte) error {
	*d.s = d.tab.intern(b)
	return nil
}

// Scan implements sql.Scanner.
func (d nameDest) Scan(src any) error {
	switch v := src.(type) {
	case string:
		*d.s = v
	case []byte:
		*d.s = d.tab.intern(v)
	case nil:
		*d.s = ""
	default:
		return fmt.Errorf("pgdriver: cannot scan %T into a name", src)
	}
	return nil
}
