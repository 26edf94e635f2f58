package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// TestWorkRefusesBeforeCreatingTheDatabase: a --reconcile-into without
// the payment kind, whose reconcilers alone run the reconcile jobs, and a
// --periodic whose kind is no valid kind name are usage errors naming
// the flag, refused before the SQLite file is created. (--until-idle
// makes a worker that wrongly starts stop at once.)
func TestWorkRefusesBeforeCreatingTheDatabase(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"reconcile without the payment kind",
			[]string{"--kind", "leasehold.sleep", "--reconcile-into", "rec"},
			"--reconcile-into needs the leasehold.demo.charge kind"},
		{"periodic with a bad kind",
			[]string{"--periodic", "tick=@every 1s:Bad Kind"},
			`--periodic: kind "Bad Kind": ' ' at byte 3`},
		{"two periodic schedules of one name",
			[]string{"--periodic", "x=@every 1s:leasehold.sleep", "--periodic", "x=@every 2s:leasehold.sleep"},
			"--periodic: schedule x given twice"},
		{"a periodic schedule named as the scan",
			[]string{"--reconcile-into", "rec", "--scan-every", "1m", "--periodic", "leasehold.demo.scan:rec=@every 1s:leasehold.sleep"},
			"--periodic: schedule leasehold.demo.scan:rec is the name of the --scan-every schedule"},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "w.db")
		args := append([]string{"work", "--until-idle", "--poll-interval", "50ms"}, c.args...)
		checkOneLineError(t, c.name, lh(t, "sqlite:"+path, args...), cli.ExitUsage, c.want)
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the database file %s exists after the refusal (stat: %v)", c.name, path, err)
		}
	}
}
