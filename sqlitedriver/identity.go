package sqlitedriver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrFileReplaced reports that the database file Open opened is no longer
// at its path: it was removed, renamed or replaced (a backup restored over
// it) while the driver ran. The driver's connections still hold the old
// file, so its writes would land where no other process, and no later
// run, looks: completions lost, jobs run again; and its reads would show
// the old file's jobs, so an idle worker would never see the new file's.
// Every write transaction and every read outside one checks it first and
// fails with this error; the process must be restarted on the file now at
// the path (see the package documentation).
var ErrFileReplaced = errors.New("sqlitedriver: the database file was replaced")

// fileIdentity is the file a Driver from Open opened, to tell whether its
// path still names it.
type fileIdentity struct {
	path string
	info os.FileInfo // nil when the file could not be read at Open
}

// openIdentity records the file now at path (made absolute, so that a
// change of the working directory changes nothing).
func openIdentity(path string) fileIdentity {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	info, err := os.Stat(path)
	if err != nil {
		return fileIdentity{path: path}
	}
	return fileIdentity{path: path, info: info}
}

// check returns ErrFileReplaced when the path no longer names the file
// recorded, nil when it does or when nothing was recorded (a Driver from
// New, or an in-memory database).
func (f fileIdentity) check() error {
	if f.info == nil {
		return nil
	}
	now, err := os.Stat(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s was removed while the process had it open; restart the process", ErrFileReplaced, f.path)
	case err != nil:
		return nil // cannot tell; the statement says what is wrong
	case !os.SameFile(f.info, now):
		return fmt.Errorf("%w: %s is another file than the one this process opened; restart the process", ErrFileReplaced, f.path)
	}
	return nil
}

// CheckFile returns an error wrapping ErrFileReplaced when the path d was
// opened on no longer names the file it opened, and nil when it does or
// when d did not open a file itself (a Driver from New or NewWithReader).
// It costs one stat of the path; a process may call it on a timer to stop
// once its file is gone, as `leasehold work` stops at the first call that
// fails with ErrFileReplaced.
func (d *Driver) CheckFile() error { return d.file.check() }
