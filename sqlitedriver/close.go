package sqlitedriver

import (
	"database/sql"
	"time"
)

// closeWait bounds how long closeOwned waits for the last connection.
const closeWait = 2 * time.Second

// closeOwned closes a database the Driver opened and returns once none of
// its connections is open, or after closeWait. database/sql opens
// connections on a goroutine of its own: one that a query asked for just
// before the close (a connection closed while others waited for it, as
// when a shutdown cancels statements) is still being opened when Close
// returns, and is closed only once open. Until then SQLite keeps the
// file's -wal and -shm, and may write them: a file removed, moved or
// copied right after Close would lose them or get them back. A connection
// a caller still holds (a transaction left open) is closed when released;
// Close does not wait past closeWait for it.
func closeOwned(db *sql.DB) error {
	err := db.Close()
	deadline := time.Now().Add(closeWait)
	for db.Stats().OpenConnections > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return err
}
