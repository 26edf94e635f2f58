package sqlitedriver

import (
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// refusalCodes are the primary result codes SQLite returns for a
// statement it will refuse again, unchanged: an SQL error (a missing
// table, a trigger's RAISE), a value too big, a constraint, a type
// mismatch, a parameter out of range, a denied authorization. Every other
// code says nothing about the statement itself: the write lock held
// elsewhere (BUSY, LOCKED), a full disk or an I/O error, a read-only or
// corrupt file, an interrupt, memory running out.
var refusalCodes = map[int]bool{
	sqlite3.SQLITE_ERROR: true, sqlite3.SQLITE_TOOBIG: true, sqlite3.SQLITE_CONSTRAINT: true,
	sqlite3.SQLITE_MISMATCH: true, sqlite3.SQLITE_RANGE: true, sqlite3.SQLITE_AUTH: true,
}

// Refused reports whether err carries an SQLite error of a code that the
// same statement would get again (see refusalCodes and driver.Refuser). A
// context that ended, before or while the statement waited for the write
// lock, carries none.
func (d *Driver) Refused(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && refusalCodes[se.Code()&0xff]
}
