package chaos

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"
)

// SessionCheck is where the workers' database sessions came from at one
// moment of a namespace-mode run (pg_stat_activity.client_addr): every
// session of a proxied worker from the proxy host's address, none of a
// direct worker's, and every running worker with a session.
type SessionCheck struct {
	At              string   `json:"at"` // start or end
	ProxiedWorkers  int      `json:"proxied_workers"`
	ProxiedSessions int      `json:"proxied_sessions"`
	DirectWorkers   int      `json:"direct_workers"`
	DirectSessions  int      `json:"direct_sessions"`
	DirectFrom      []string `json:"direct_from"` // the addresses of the direct workers' sessions
	Wrong           []string `json:"wrong,omitempty"`
}

// OK reports whether the snapshot broke no rule.
func (c SessionCheck) OK() bool { return len(c.Wrong) == 0 }

// session is one row of pg_stat_activity: its owner and client address
// ("local" for a Unix socket).
type session struct{ owner, addr string }

// sessionWait bounds the wait for every running worker to have a session.
const sessionWait = 30 * time.Second

// sessionsSQL lists the sessions of the run's workers.
const sessionsSQL = `SELECT application_name, coalesce(host(client_addr), 'local') FROM pg_stat_activity
	WHERE application_name LIKE $1`

// checkSessions waits until every running worker has a session (up to
// sessionWait), then records where the sessions come from. Only a failed
// query is an error; a broken rule goes into the check.
func (h *harness) checkSessions(ctx context.Context, at string) error {
	running := map[string]bool{}
	for _, p := range h.current() {
		running[p.Owner()] = true
	}
	deadline := time.Now().Add(sessionWait)
	for {
		rows, err := h.sessions(ctx)
		if err != nil {
			return err
		}
		if missing(rows, running) == 0 || time.Now().After(deadline) {
			proxy, _, _ := net.SplitHostPort(h.net.addr)
			c := judgeSessions(at, rows, running, h.net.owners, proxy, h.hosts.workers.Addr.String())
			h.net.sessions = append(h.net.sessions, c)
			h.logf("sessions (%s): %s", at, c.summary(proxy))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sessions reads the run's workers' sessions.
func (h *harness) sessions(ctx context.Context) ([]session, error) {
	db, err := h.db.SQL()
	if err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, err := db.QueryContext(qctx, sessionsSQL, "chaos-"+h.run+"-%")
	if err != nil {
		return nil, fmt.Errorf("chaos: read pg_stat_activity: %w", err)
	}
	defer rows.Close()
	var out []session
	for rows.Next() {
		var s session
		if err := rows.Scan(&s.owner, &s.addr); err != nil {
			return nil, fmt.Errorf("chaos: read pg_stat_activity: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// missing counts the running workers without a session.
func missing(rows []session, running map[string]bool) int {
	seen := map[string]bool{}
	for _, s := range rows {
		seen[s.owner] = true
	}
	n := 0
	for owner := range running {
		if !seen[owner] {
			n++
		}
	}
	return n
}

// judgeSessions checks the sessions: those of a proxied owner must all
// come from proxy, those of the others from neither proxy nor the worker
// host (which reaches the server only through the proxy), and each running
// owner must have one.
func judgeSessions(at string, rows []session, running, proxied map[string]bool, proxy, workerHost string) SessionCheck {
	c := SessionCheck{At: at}
	has := map[string]bool{}
	from := map[string]bool{}
	for _, s := range rows {
		has[s.owner] = true
		if proxied[s.owner] {
			c.ProxiedSessions++
			if s.addr != proxy {
				c.Wrong = append(c.Wrong, fmt.Sprintf("proxied worker %s has a session from %s, not from the proxy host's %s", s.owner, s.addr, proxy))
			}
			continue
		}
		c.DirectSessions++
		from[s.addr] = true
		if s.addr == proxy || s.addr == workerHost {
			c.Wrong = append(c.Wrong, fmt.Sprintf("direct worker %s has a session from %s, a namespace of the proxied workers' path", s.owner, s.addr))
		}
	}
	for owner := range running {
		switch {
		case !has[owner]:
			c.Wrong = append(c.Wrong, fmt.Sprintf("worker %s has no session", owner))
		case proxied[owner]:
			c.ProxiedWorkers++
		default:
			c.DirectWorkers++
		}
	}
	for a := range from {
		c.DirectFrom = append(c.DirectFrom, a)
	}
	sort.Strings(c.DirectFrom)
	sort.Strings(c.Wrong)
	return c
}

func (c SessionCheck) summary(proxy string) string {
	s := fmt.Sprintf("%d proxied workers, %d sessions, from %s; %d direct workers, %d sessions, from %s",
		c.ProxiedWorkers, c.ProxiedSessions, proxy, c.DirectWorkers, c.DirectSessions, strings.Join(c.DirectFrom, ", "))
	if len(c.Wrong) > 0 {
		s += "; WRONG: " + strings.Join(c.Wrong, "; ")
	}
	return s
}
