package main

import (
	"os"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// TestChaosIgnoresDatabaseEnv: `leasehold chaos`, like the demo, reads
// only --db: with $LEASEHOLD_DATABASE_URL naming a server that is not
// there it runs on a temporary SQLite file of its own. The README's
// paragraph on where the database comes from says so, naming chaos with
// demo.
func TestChaosIgnoresDatabaseEnv(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(string(readme), "The database comes\nfrom `--db`")
	para, _, _ := strings.Cut(rest, "\n\n")
	if !found || !strings.Contains(para, "`demo` and `chaos` ignore `$"+cli.EnvDatabaseURL+"`") {
		t.Errorf("the README's paragraph on where the database comes from does not say that demo and chaos ignore $%s:\n%s",
			cli.EnvDatabaseURL, para)
	}
	env := []string{cli.EnvDatabaseURL + "=postgres://nobody@127.0.0.1:1/none?connect_timeout=2"}
	r := runIn(t, t.TempDir(), env, "chaos", "--workers", "2", "--jobs", "2", "--kill-every", "0", "--freeze-every", "0", "--stall-prob", "0")
	if r.code != 0 || !strings.Contains(r.stdout, "database sqlite:") {
		t.Errorf("chaos with $%s set, without --db: want a run on a temporary SQLite file\n%s", cli.EnvDatabaseURL, r)
	}
}
