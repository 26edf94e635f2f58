package main

import (
	"strings"
	"testing"
)

// TestHelpTexts: the help of a command says what it does, as the drivers
// and the dashboard do it: jobs cancel, retry and delete name reconciling
// jobs; serve says every page needs authentication once it is
// configured; purge shows no default for its required flag.
func TestHelpTexts(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/lh.db"
	for _, c := range []struct {
		args       []string
		want, lack string
	}{
		{[]string{"jobs", "cancel", "--help"}, "Cancel a pending, stuck or reconciling job at once", ""},
		{[]string{"jobs", "retry", "--help"}, "A completed job is refused too (exit code 1), unless --completed is given", "cancelled or completed job pending now"},
		{[]string{"jobs", "delete", "--help"}, "A pending, processing, stuck or reconciling job is left alone", ""},
		{[]string{"serve", "--help"}, "With authentication configured, every page needs it", "Changes (retry, cancel, bulk actions) need authentication"},
		{[]string{"purge", "--help"}, "(required)", "(default 0s)"},
		{[]string{"periodic", "forget", "--help"}, "exits with code 3 (not found)", ""},
	} {
		help := strings.Join(strings.Fields(ok(t, db, c.args...)), " ")
		if !strings.Contains(help, c.want) || (c.lack != "" && strings.Contains(help, c.lack)) {
			t.Errorf("leasehold %s: want %q and not %q in:\n%s", strings.Join(c.args, " "), c.want, c.lack, help)
		}
	}
}
