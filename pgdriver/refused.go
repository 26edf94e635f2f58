package pgdriver

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// refusalClasses are the SQLSTATE classes of errors the server returns
// for a statement it ran and will refuse again, unchanged: cardinality
// (21), data (22) and integrity constraint (23) errors, SQL routine and
// external routine errors (2F, 38, 39), exceptions raised by a routine or
// trigger (P0, 2B), a missing object or privilege or a syntax error (42),
// a check option (44), a program limit (54). Every other class says
// nothing about the statement itself: connection exceptions (08), a read-
// only transaction on a standby being promoted (25), serialization
// failures and deadlocks (40), insufficient resources (53), lock timeouts
// (55), shutdowns, restarts and cancelled statements (57), system errors
// (58), internal errors (XX).
var refusalClasses = map[string]bool{
	"21": true, "22": true, "23": true, "2B": true, "2F": true, "38": true, "39": true,
	"42": true, "44": true, "54": true, "P0": true,
}

// Refused reports whether err carries an error the server returned for
// the statement, of a class that the same statement would get again (see
// refusalClasses and driver.Refuser). An error from the connection (it
// broke, or could not be made), a timeout and a cancelled context carry
// none: the statement may never have reached the server.
func (d *Driver) Refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && len(pe.Code) == 5 && refusalClasses[pe.Code[:2]]
}
