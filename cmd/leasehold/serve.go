package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/work"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
	"github.com/leasehold/leasehold/web"
)

// The environment variables `leasehold serve` reads its credentials from
// (flags override them; a flag's value shows in the process list, the
// environment's does not).
const (
	envWebToken    = "LEASEHOLD_WEB_TOKEN"
	envWebUser     = "LEASEHOLD_WEB_USER"
	envWebPassword = "LEASEHOLD_WEB_PASSWORD"
)

// fileCheckEvery is how often serve checks that its SQLite file is still
// the one it opened.
const fileCheckEvery = time.Second

// serveShutdownTimeout bounds how long requests in flight may finish once
// the server is told to stop.
const serveShutdownTimeout = 5 * time.Second

// minSessionLifetime and maxSessionLifetime bound --session-lifetime:
// browsers keep a cookie about 400 days at most.
const (
	minSessionLifetime = time.Minute
	maxSessionLifetime = 400 * cli.Day
)

// serveTimeouts bound how long the server waits on one client: header for
// a request's headers, read for the whole request with its body (a form
// is at most a few KiB), write for the answer from the end of the headers
// on (a page is read from the database and written in well under a
// second), idle for the next request on a kept-alive connection. Without
// read and write, a client that sends its body or reads the answer one
// byte a minute holds a connection and its goroutine for ever, before it
// has even logged in (forms are read before authentication).
type serveTimeouts struct {
	header, read, write, idle time.Duration
}

// defaultServeTimeouts returns the timeouts of leasehold serve.
func defaultServeTimeouts() serveTimeouts {
	return serveTimeouts{header: 10 * time.Second, read: 30 * time.Second, write: 2 * time.Minute, idle: time.Minute}
}

type serveFlags struct {
	addr, prefix, logLevel string
	opts                   web.Options
	policy                 policyFlags
}

func (a *app) serveCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the web dashboard: queues, jobs, workers, lease timelines, and the operator's actions",
		Long: `Serve the web dashboard on --addr until interrupted. With authentication
configured, every page needs it (the login page and the stylesheet aside): a
token ($` + envWebToken + ` or --token; browsers log in with it and stay
logged in for --session-lifetime; scripts send "Authorization: Bearer TOKEN")
or basic-auth credentials ($` + envWebUser + ` and $` + envWebPassword + `, or
--basic-user and --basic-password). With neither, every
page is open to whoever reaches the address, and the dashboard is read-only;
it is then served only on a loopback address: serve refuses any other address
without authentication, and answers 403 to a request that does not name a
loopback host (localhost or a loopback address: 127.0.0.1, [::1], …), such as a web page's whose name
was made to resolve to 127.0.0.1 (DNS rebinding). --read-only refuses changes
(retry, cancel, bulk actions) even to authenticated operators. Put a
TLS-terminating proxy in front of it for anything but localhost: credentials
travel in every request; and give it --secure-cookies then, so that browsers send its cookies over HTTPS
only (it sees the proxy's plain HTTP, and cannot tell by itself). The
Prometheus metrics at /metrics need no authentication (they hold no job data).
The dashboard's "run the stuck watcher now" applies --flag-stuck, --reconcile
and the --reconcile-* flags, as ` + "`leasehold watch`" + ` does: give serve the workers' queue
policies, or expired leases of a queue that flags or reconciles are requeued.`,
		Example: `  leasehold serve --db postgres://localhost/app
  LEASEHOLD_WEB_TOKEN=$(openssl rand -hex 16) leasehold serve --addr :8080
  leasehold serve --read-only --prefix /queue`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			keepRunningOnBrokenPipe()
			return a.serve(cmd, &f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on (host:port)")
	fl.StringVar(&f.prefix, "prefix", "", "path to serve the dashboard under, such as /queue (default the root)")
	fl.BoolVar(&f.opts.ReadOnly, "read-only", false, "refuse every change, even to authenticated operators")
	fl.BoolVar(&f.opts.SecureCookies, "secure-cookies", false,
		"mark the dashboard's cookies Secure: set it when a proxy serves the dashboard over HTTPS")
	fl.Var(cli.NewDurationValue(&f.opts.SessionLifetime, web.DefaultSessionLifetime, minSessionLifetime, maxSessionLifetime),
		"session-lifetime", "how long a browser stays logged in with the token, 1m to 400d")
	fl.StringVar(&f.opts.Token, "token", "", "token that authenticates operators (default $"+envWebToken+")")
	fl.StringVar(&f.opts.BasicUser, "basic-user", "", "basic-auth user (default $"+envWebUser+")")
	fl.StringVar(&f.opts.BasicPassword, "basic-password", "", "basic-auth password (default $"+envWebPassword+")")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level on stderr: debug, info, warn, error")
	f.policy.add(fl)
	return cmd
}

func (a *app) serve(cmd *cobra.Command, f *serveFlags) error {
	if err := f.resolve(a.getenv); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return cli.Usagef("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	if err := checkListen(f.addr, authenticated(f.opts)); err != nil {
		return err
	}
	queues, err := f.policy.queues()
	if err != nil {
		return err
	}
	return a.withPolicyDB(cmd, queues, func(db *cli.DB, c *leasehold.Client) error {
		f.opts.Logger = a.logger(level)
		dash, err := web.New(c, f.opts)
		if err != nil {
			return cli.UsageError(err)
		}
		ln, err := net.Listen("tcp", f.addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", f.addr, err)
		}
		mode := serveMode(f.opts)
		metrics, err := serveMetrics(c)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer metrics.close()
		fmt.Fprintf(a.stderr, "leasehold serve: dashboard at http://%s%s/ (%s), metrics at http://%s/metrics\n",
			ln.Addr(), f.opts.Prefix, mode, ln.Addr())
		mux := serveRoutes(dash, f.opts.Prefix)
		mux.Handle("GET /metrics", metrics.handler)
		ctx, stop := context.WithCancelCause(cmd.Context())
		defer stop(nil)
		go work.WatchFile(ctx, db.Driver, fileCheckEvery, stop)
		var h http.Handler = mux
		if !authenticated(f.opts) {
			h = loopbackHostOnly(h)
		}
		// Every answer, not only the dashboard's: the redirect to the
		// prefix, the 404s outside it, the metrics and the Host refusals
		// too.
		if err := runServer(ctx, ln, web.SecurityHeaders(h), defaultServeTimeouts()); err != nil {
			return err
		}
		if err := context.Cause(ctx); work.Fatal(err) { // its file is gone: every page would answer 500
			return fmt.Errorf("%w (the dashboard stopped)", err)
		}
		return nil
	})
}

// serveMode says, for the line that tells where the dashboard is, who may
// see its pages and who may change jobs.
func serveMode(o web.Options) string {
	var auth string
	switch {
	case o.Token != "" && o.BasicUser != "":
		auth = "the token or the basic-auth credentials"
	case o.Token != "":
		auth = "the token"
	case o.BasicUser != "":
		auth = "the basic-auth credentials"
	default:
		return "read-only: no authentication configured, every page open to whoever reaches this address"
	}
	if o.ReadOnly {
		return "every page needs " + auth + "; read-only: changes refused to everyone"
	}
	return "every page and change needs " + auth
}

// resolve fills the credentials from the environment where no flag gave
// them, refuses a blank or short token or password, checks the prefix,
// and runs the dashboard's own checks (web.Options.Check).
func (f *serveFlags) resolve(getenv func(string) string) error {
	for dst, env := range map[*string]string{&f.opts.Token: envWebToken, &f.opts.BasicUser: envWebUser,
		&f.opts.BasicPassword: envWebPassword} {
		if *dst == "" {
			*dst = getenv(env)
		}
	}
	if blank(f.opts.Token) {
		// Not a token: refused, rather than let it pass for
		// authentication on a public address.
		return cli.Usagef("the token ($%s or --token) is blank: set a real one, or none to serve the dashboard read-only on a loopback address",
			envWebToken)
	}
	if (f.opts.BasicUser == "") != (f.opts.BasicPassword == "") {
		return cli.Usagef("basic auth needs both a user and a password (--basic-user, --basic-password or $%s, $%s)",
			envWebUser, envWebPassword)
	}
	if blank(f.opts.BasicUser) || blank(f.opts.BasicPassword) {
		return cli.Usagef("the basic-auth user or password (--basic-user, --basic-password or $%s, $%s) is blank: set real ones, or none",
			envWebUser, envWebPassword)
	}
	if short(f.opts.Token) {
		return cli.Usagef("the token ($%s or --token) has fewer than %d characters: use a random one, such as $(openssl rand -hex 16)",
			envWebToken, web.MinSecretLength)
	}
	if short(f.opts.BasicPassword) {
		return cli.Usagef("the basic-auth password (--basic-password or $%s) has fewer than %d characters",
			envWebPassword, web.MinSecretLength)
	}
	if err := web.CheckPrefix(f.prefix); err != nil {
		return cli.Usagef("--prefix: %w", err)
	}
	f.opts.Prefix = strings.TrimSuffix(f.prefix, "/")
	// The dashboard's remaining checks (a basic-auth user no client could
	// send, say), before the database is opened.
	if err := f.opts.Check(); err != nil {
		return cli.Usagef("%w", err)
	}
	return nil
}

// short reports whether s is set but shorter than the dashboard accepts.
func short(s string) bool { return s != "" && utf8.RuneCountInString(s) < web.MinSecretLength }

// blank reports whether s is set but only white space: no credential at
// all, passed off as one.
func blank(s string) bool { return s != "" && strings.TrimSpace(s) == "" }

// checkListen refuses a non-loopback address unless authentication is
// configured (the dashboard shows every job's arguments), and an address
// whose host does not resolve, before the database is opened.
func checkListen(addr string, authenticated bool) error {
	if err := cli.CheckAddr("--addr", addr); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(addr) // checked
	if !authenticated && !isLoopback(host) {
		return cli.Usagef("refusing to serve the dashboard on %s without authentication: it would show every job to the network; "+
			"set $%s (or basic-auth credentials), or listen on 127.0.0.1", addr, envWebToken)
	}
	if _, err := net.ResolveTCPAddr("tcp", addr); err != nil {
		return cli.FlagError("--addr", err)
	}
	return nil
}

// authenticated reports whether o configures authentication: a token or
// basic-auth credentials.
func authenticated(o web.Options) bool { return o.Token != "" || o.BasicUser != "" }

// loopbackHostOnly answers 403 to a request whose Host header does not
// name a loopback host, before next sees it. Without authentication the
// dashboard's only protection is its loopback address, and that is not
// enough: a web page the operator visits can make its own name resolve to
// 127.0.0.1 (DNS rebinding) and read every page as its own origin, but
// its requests still carry its name in Host. With authentication it is
// not needed (the credentials and cookies belong to the real host) and
// not wanted (operators reach it under any name).
func loopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "the dashboard without authentication answers only requests to localhost or a loopback address "+
				"(Host "+strconv.Quote(r.Host)+")", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether the Host header hostport, its port removed,
// is localhost or a loopback IP address (127.0.0.0/8, ::1 in any form
// net/netip parses, bracketed or not).
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1] // an IPv6 address without a port
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// isLoopback reports whether host names only the loopback interface. An
// empty host listens on every interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveRoutes is the server's mux: the dashboard under its prefix. Other
// endpoints of the server (such as a metrics endpoint) are registered here,
// beside it.
func serveRoutes(dash http.Handler, prefix string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(prefix+"/", dash)
	if prefix != "" {
		mux.Handle(prefix, http.RedirectHandler(prefix+"/", http.StatusMovedPermanently))
	}
	return mux
}

// dashMetrics are the Prometheus metrics `leasehold serve` exposes: the
// queue depth and oldest due age of the database, read at a bounded rate,
// and the Go runtime's. The dashboard's client runs no workers, so the job
// counters stay at zero here; workers expose theirs (work --metrics-addr).
type dashMetrics struct {
	m       *leaseholdprom.Metrics
	handler http.Handler
}

func serveMetrics(c *leasehold.Client) (*dashMetrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := leaseholdprom.New(leaseholdprom.Options{Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if err := m.Attach(c); err != nil {
		m.Close()
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &dashMetrics{m: m, handler: leaseholdprom.Handler(reg)}, nil
}

func (d *dashMetrics) close() { d.m.Close() }

// runServer serves h on ln, bounded by to, until ctx is done, then lets
// requests in flight finish for serveShutdownTimeout. Connections that
// have sent no request yet are closed as the shutdown begins (see
// unusedConns).
func runServer(ctx context.Context, ln net.Listener, h http.Handler, to serveTimeouts) error {
	var unused unusedConns
	srv := &http.Server{Handler: h, ReadHeaderTimeout: to.header, ReadTimeout: to.read,
		WriteTimeout: to.write, IdleTimeout: to.idle, ConnState: unused.track}
	srv.RegisterOnShutdown(unused.close)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// unusedConns are the server's connections that have sent no request yet.
// Browsers open such connections ahead of the requests they may make, and
// net/http's Shutdown waits for each up to 5 s after it was opened, as
// long as serve's whole budget, before it takes it for idle: one opened
// just before the shutdown made serve exit 1 with nothing in flight. They
// are closed as the shutdown begins (after the listener, so no new one
// comes): a request that was on its way on one gets a closed connection,
// as on any server that stops, and nothing of it was done.
type unusedConns struct {
	mu sync.Mutex
	m  map[net.Conn]struct{}
}

// track is the server's ConnState hook.
func (u *unusedConns) track(c net.Conn, state http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if state != http.StateNew {
		delete(u.m, c)
		return
	}
	if u.m == nil {
		u.m = map[net.Conn]struct{}{}
	}
	u.m[c] = struct{}{}
}

// close closes every connection that has sent no request yet.
func (u *unusedConns) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c := range u.m {
		_ = c.Close()
		delete(u.m, c)
	}
}
