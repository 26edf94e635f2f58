package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// TestScanNameTooLong: a --reconcile-into queue name that the queue
// rule accepts (116 bytes, limit 128) makes the --scan-every schedule's
// name, "leasehold.demo.scan:"+queue, 136 bytes, over the periodic name
// limit. That is a usage error on --reconcile-into, refused before the
// database is created, like the other --scan-every checks.
func TestScanNameTooLong(t *testing.T) {
	q := "r" + strings.Repeat("x", 115)
	path := filepath.Join(t.TempDir(), "w.db")
	r := lh(t, "sqlite:"+path, "work", "--until-idle", "--poll-interval", "50ms", "--reconcile-into", q, "--scan-every", "1s")
	if r.code != cli.ExitUsage {
		t.Errorf("exit code %d, want %d (usage)\n%s", r.code, cli.ExitUsage, r)
	}
	if !strings.Contains(r.stderr, "--reconcile-into") || !strings.Contains(r.stderr, "128") || !strings.Contains(r.stderr, "--scan-every") {
		t.Errorf("stderr %q, want it to name --reconcile-into, the 128-byte limit and --scan-every", r.stderr)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the database file %s was created before the refusal (stat: %v)", path, err)
	}
	// 108 bytes: the scan's name is 128 bytes, the limit itself.
	path = filepath.Join(t.TempDir(), "ok.db")
	q = "r" + strings.Repeat("x", 107)
	if r := lh(t, "sqlite:"+path, "work", "--until-idle", "--poll-interval", "50ms", "--reconcile-into", q, "--scan-every", "1s"); r.code != 0 {
		t.Errorf("a scan name of 128 bytes: %s", r)
	}
}
