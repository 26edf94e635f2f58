package work

import (
	"context"
	"time"
)

// fileCheckEvery is how often a worker on an SQLite file checks that the
// file is still the one it opened.
const fileCheckEvery = time.Second

// fileChecker is what sqlitedriver's Driver from Open offers: an error
// (wrapping sqlitedriver.ErrFileReplaced) once its path no longer names
// the file it opened.
type fileChecker interface{ CheckFile() error }

// fileWatch stops a worker whose database file was removed or replaced
// while it ran: the driver refuses every call from then on, and a worker
// left running would only log failures while jobs wait in the new file.
type fileWatch struct {
	gone chan error // holds the first failed check
}

// watchFile checks d's file every fileCheckEvery until ctx ends, when d
// has one; on the first failed check it records the error and calls stop.
func watchFile(ctx context.Context, d any, stop context.CancelFunc) *fileWatch {
	w := &fileWatch{gone: make(chan error, 1)}
	fc, ok := d.(fileChecker)
	if !ok {
		return w
	}
	go tick(ctx, fileCheckEvery, func() bool {
		err := fc.CheckFile()
		if err != nil {
			w.gone <- err
			stop()
		}
		return err == nil
	})
	return w
}

// err returns the failed check that stopped the worker, if any.
func (w *fileWatch) err() error {
	select {
	case err := <-w.gone:
		return err
	default:
		return nil
	}
}
