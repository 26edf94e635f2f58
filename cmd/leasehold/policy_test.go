package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

// parsePolicy parses args as the policy flags of watch and serve and
// returns the queues they describe.
func parsePolicy(t *testing.T, args ...string) (map[string]leasehold.QueueConfig, error) {
	t.Helper()
	var p policyFlags
	fl := pflag.NewFlagSet("policy", pflag.ContinueOnError)
	fl.SetOutput(&discard{})
	p.add(fl)
	if err := fl.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return p.queues()
}

// discard is an io.Writer that drops what pflag would print.
type discard struct{}

func (*discard) Write(b []byte) (int, error) { return len(b), nil }

// TestPolicyFlagsReconcileFields: --reconcile-kind, --reconcile-max-attempts
// and --reconcile-priority complete the --reconcile policy of the queue
// they name, so that the watcher writes the reconcile jobs the workers'
// ReconcilePolicy would; a queue named by --reconcile alone keeps the
// library's defaults.
func TestPolicyFlagsReconcileFields(t *testing.T) {
	queues, err := parsePolicy(t, "--reconcile", "payments=reconcile,refunds=reconcile", "--flag-stuck", "mail",
		"--reconcile-kind", "payments=payments.reconcile", "--reconcile-max-attempts", "payments=1000",
		"--reconcile-priority", "payments=7")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]leasehold.QueueConfig{
		"payments": {Reconcile: &leasehold.ReconcilePolicy{Queue: "reconcile", Kind: "payments.reconcile", MaxAttempts: 1000, Priority: 7}},
		"refunds":  {Reconcile: &leasehold.ReconcilePolicy{Queue: "reconcile"}},
		"mail":     {FlagStuck: true},
	}
	if !reflect.DeepEqual(queues, want) {
		t.Errorf("queues = %s, want %s", describeQueues(queues), describeQueues(want))
	}
}

// describeQueues prints queues with their reconcile policies, not the
// policies' addresses.
func describeQueues(queues map[string]leasehold.QueueConfig) string {
	var b strings.Builder
	for name, q := range queues {
		fmt.Fprintf(&b, "%s: flag-stuck %t", name, q.FlagStuck)
		if q.Reconcile != nil {
			fmt.Fprintf(&b, ", reconcile %+v", *q.Reconcile)
		}
		b.WriteString("; ")
	}
	return b.String()
}

// TestPolicyFlagsReconcileFieldRefusals: a reconcile field flag is a
// one-line usage error, before any database is opened, when its queue
// has no --reconcile, when it names a queue twice, when its value is not
// QUEUE=VALUE, and when the value is one the library refuses.
func TestPolicyFlagsReconcileFieldRefusals(t *testing.T) {
	rec := []string{"--once", "--reconcile", "pay=rec"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"kind of a queue without --reconcile", []string{"--once", "--reconcile-kind", "pay=p.reconcile"},
			"--reconcile-kind pay=p.reconcile: queue pay has no --reconcile"},
		{"priority of a queue that flags", []string{"--once", "--flag-stuck", "pay", "--reconcile-priority", "pay=1"},
			"--reconcile-priority pay=1: queue pay has no --reconcile"},
		{"kind twice", append(rec, "--reconcile-kind", "pay=a", "--reconcile-kind", "pay=b"),
			"--reconcile-kind names queue pay twice"},
		{"max attempts twice in one value", append(rec, "--reconcile-max-attempts", "pay=3,pay=4"),
			"--reconcile-max-attempts names queue pay twice"},
		{"no queue", append(rec, "--reconcile-kind", "=p.reconcile"), `--reconcile-kind "=p.reconcile": want QUEUE=KIND`},
		{"no value", append(rec, "--reconcile-priority", "pay="), `--reconcile-priority "pay=": want QUEUE=P`},
		{"no equals sign", append(rec, "--reconcile-max-attempts", "5"), `--reconcile-max-attempts "5": want QUEUE=N`},
		{"empty", append(rec, "--reconcile-kind="), "--reconcile-kind is empty"},
		{"bad kind", append(rec, "--reconcile-kind", "pay=a b"), `--reconcile-kind pay=a b: "a b": ' ' at byte 1`},
		{"max attempts 0", append(rec, "--reconcile-max-attempts", "pay=0"),
			`--reconcile-max-attempts pay=0: want a whole number from 1 to 10000`},
		{"max attempts too high", append(rec, "--reconcile-max-attempts", "pay=10001"),
			`--reconcile-max-attempts pay=10001: want a whole number from 1 to 10000`},
		{"max attempts not a number", append(rec, "--reconcile-max-attempts", "pay=lots"),
			`--reconcile-max-attempts pay=lots: want a whole number from 1 to 10000`},
		{"negative priority", append(rec, "--reconcile-priority", "pay=-1"),
			`--reconcile-priority pay=-1: want a whole number from 0 to 32767`},
		{"priority too high", append(rec, "--reconcile-priority", "pay=32768"),
			`--reconcile-priority pay=32768: want a whole number from 0 to 32767`},
	}
	for _, c := range cases {
		for _, cmd := range []string{"watch", "serve"} {
			args := c.args
			if cmd == "serve" {
				args = args[1:] // serve has no --once
			}
			path := filepath.Join(t.TempDir(), "never.db")
			r := lh(t, "sqlite:"+path, append([]string{cmd}, args...)...)
			checkOneLineError(t, cmd+": "+c.name, r, cli.ExitUsage, c.want)
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %s: the database file was created (stat: %v)", cmd, c.name, err)
			}
		}
	}
}

// TestWatchReconcileWorkersPolicy: `watch --reconcile` with the workers'
// kind, retry budget and priority inserts the reconcile job the workers'
// ReconcilePolicy would, not one of the default kind no worker handles.
func TestWatchReconcileWorkersPolicy(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		killedHolding(t, db, "pay")
		waitFor(t, 30*time.Second, "the expired lease in jobs stuck", func() bool {
			var jobs []view.JobView
			okJSON(t, db, &jobs, "jobs", "stuck")
			return len(jobs) == 1 && jobs[0].Lease != nil && jobs[0].Lease.Expired
		})
		ok(t, db, "watch", "--once", "--reconcile", "pay=rec", "--reconcile-kind", "pay=payments.reconcile",
			"--reconcile-max-attempts", "pay=1000", "--reconcile-priority", "pay=3")
		var recs []view.JobView
		okJSON(t, db, &recs, "jobs", "list", "--queue", "rec")
		if len(recs) != 1 || recs[0].Kind != "payments.reconcile" || recs[0].MaxAttempts != 1000 || recs[0].Priority != 3 {
			t.Errorf("reconcile jobs = %+v, want one payments.reconcile, max attempts 1000, priority 3", recs)
		}
	})
}
