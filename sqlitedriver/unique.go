package sqlitedriver

import (
	"errors"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// scopedKeyTaken reports whether err is a violation of the unique index of
// scoped keys (migration 005): a write that would make two jobs hold one
// scoped key.
func scopedKeyTaken(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE &&
		strings.Contains(se.Error(), "unique_scoped_key")
}
