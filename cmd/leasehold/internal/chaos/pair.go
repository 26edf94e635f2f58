package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/netfault"
	"github.com/leasehold/leasehold/internal/pgctl"
)

// Replication modes of a failover run.
const (
	FailoverSync  = "sync"  // synchronous_standby_names names the standby
	FailoverAsync = "async" // the standby streams, nobody waits for it
)

// standbyName is the standby's application_name, which
// synchronous_standby_names names.
const standbyName = "standby1"

// pair is the primary and the standby a failover run starts: each on its
// Unix socket in a directory of its own under dir.
type pair struct {
	mode             string
	dir              string
	tmp              bool // dir was made for the run: removed with it
	primary, standby *pgctl.Node
	old              *pgctl.Node // the old primary, restarted for the comparison
	// link, with StandbyDelay, carries the replication stream and delays
	// it; it is cut when the primary dies, losing what was in flight.
	link *netfault.Proxy
}

// url is the multi-host URL of the workers: the primary, then the
// standby; target_session_attrs=read-write makes pgx skip a server that
// is down or read-only, so that connections follow the promotion.
func (p *pair) url() string {
	return fmt.Sprintf("postgres://postgres@/postgres?host=%s,%s&port=%d,%d&target_session_attrs=read-write&sslmode=disable",
		p.primary.Dir, p.standby.Dir, p.primary.Port, p.standby.Port)
}

// startPair creates and starts the primary and its standby, and waits
// until the standby streams (and, in sync mode, is the synchronous one).
func (h *harness) startPair(ctx context.Context) error {
	o := h.o
	p := &pair{mode: o.Failover, dir: o.FailoverDir}
	if p.dir == "" {
		dir, err := os.MkdirTemp("", "leasehold-failover-")
		if err != nil {
			return fmt.Errorf("chaos: %w", err)
		}
		p.dir, p.tmp = dir, true
	}
	h.pair = p
	if err := pgctl.PrepareDir(p.dir); err != nil {
		return err
	}
	conf := ""
	if p.mode == FailoverSync {
		// In postgresql.conf, so that the standby copies it, as a standby
		// built from a primary's files does.
		conf = fmt.Sprintf("synchronous_standby_names = '%s'\nsynchronous_commit = on\n", standbyName)
	}
	var err error
	if p.primary, err = pgctl.InitPrimary(ctx, filepath.Join(p.dir, "primary"), o.PrimaryPort, conf); err != nil {
		return err
	}
	via, err := h.standbyLink(p)
	if err != nil {
		return err
	}
	if p.standby, err = pgctl.NewStandby(ctx, p.primary, filepath.Join(p.dir, "standby"), o.StandbyPort, standbyName, via); err != nil {
		return err
	}
	want := "async"
	if p.mode == FailoverSync {
		want = "sync"
	}
	state, err := waitStreaming(ctx, p.primary.URL(), want)
	if err != nil {
		return err
	}
	h.logf("primary %s and standby %s (pg_basebackup -R), replication %s (%s)%s", p.primary.Dir, p.standby.Dir, p.mode, state, h.linkNote())
	h.o.Target = cli.Target{Dialect: cli.Postgres, URL: p.url()}
	return nil
}

// standbyLink starts the delaying proxy of the replication stream when
// StandbyDelay is set, and returns the standby's primary_conninfo host
// and port ("" without it).
func (h *harness) standbyLink(p *pair) (string, error) {
	if h.o.StandbyDelay <= 0 {
		return "", nil
	}
	dial, _, err := netfault.PostgresUpstream(p.primary.URL())
	if err != nil {
		return "", err
	}
	if p.link, err = netfault.Listen("127.0.0.1:0", dial); err != nil {
		return "", err
	}
	p.link.Delay(h.o.StandbyDelay)
	return fmt.Sprintf("host=127.0.0.1 port=%d", p.link.Addr().Port), nil
}

func (h *harness) linkNote() string {
	if h.pair.link == nil {
		return ""
	}
	return fmt.Sprintf("; the replication stream reaches the standby %s late (a distant standby)", cli.FormatDuration(h.o.StandbyDelay))
}

// waitStreaming waits until the primary has a streaming standby whose
// sync_state is want (a synchronous standby shows async for a moment
// after it connects), and returns it.
func waitStreaming(ctx context.Context, url, want string) (string, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return "", fmt.Errorf("chaos: %w", err)
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state string
		err := db.QueryRowContext(ctx, `SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming' AND application_name = $1`,
			standbyName).Scan(&state)
		if err == nil && state == want {
			return state, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("chaos: the standby is not streaming as %s after 30s (%q): %v", want, state, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// close stops the servers and removes a directory made for the run.
func (p *pair) close(keep bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if p.link != nil {
		_ = p.link.Close()
	}
	for _, s := range []*pgctl.Node{p.primary, p.standby, p.old} {
		if s != nil {
			_ = s.Stop(ctx)
		}
	}
	if p.tmp && !keep {
		_ = os.RemoveAll(p.dir)
	}
}
