package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/leasehold/leasehold"
)

// Options configures the dashboard. The zero value is a read-only
// dashboard with no authentication, mounted at the root.
type Options struct {
	// Token, when set, is a shared secret: a request is authenticated by
	// "Authorization: Bearer <Token>", or by the session cookie the login
	// page sets once the token is typed in. New refuses a token of only
	// white space, or of fewer than MinSecretLength characters.
	Token string
	// BasicUser and BasicPassword, when both set, authenticate requests
	// with HTTP basic authentication. The password has at least
	// MinSecretLength characters; the user holds no colon and no control
	// character (RFC 7617), which no client could send as part of it.
	BasicUser, BasicPassword string
	// ReadOnly refuses every change (retry, cancel, bulk actions, the
	// watcher pass) even to authenticated operators, and hides their
	// buttons.
	ReadOnly bool
	// Prefix is the path the handler is mounted under, such as "/admin/jobs"
	// (no trailing slash; empty for the root). The handler strips it from
	// request paths and puts it in front of every link it renders.
	Prefix string
	// Secret keys the CSRF tokens. Set it (32 random bytes or more) when
	// several instances serve the dashboard behind one load balancer; by
	// default each handler draws its own at New.
	Secret []byte
	// Logger receives the errors of failed requests, each with the error
	// id (error_id) that its page shows instead of the error's text, and
	// an Info record of each change made (job, queue and bulk actions,
	// watcher passes); nil discards them.
	Logger *slog.Logger
	// UnclaimedAfter is how long a due job may wait unclaimed, with no
	// job of its kind running, before the overview flags its kind
	// (default DefaultUnclaimedAfter).
	UnclaimedAfter time.Duration
	// PageSize is the number of jobs per page of the jobs list (default
	// DefaultPageSize, at most MaxBulk).
	PageSize int
	// SecureCookies marks the session and CSRF cookies Secure on every
	// answer, so that a browser sends them over HTTPS only. Set it when the
	// dashboard is served over HTTPS through a TLS-terminating proxy: the
	// handler then sees plain HTTP requests, and marks its cookies Secure
	// only for requests that came over TLS to it.
	SecureCookies bool
	// SessionLifetime is how long a browser stays logged in after it typed
	// the token (default DefaultSessionLifetime): its session cookie is
	// refused from then on, and the browser drops it. Logging out drops
	// the browser's cookie only: a copy of it taken elsewhere works until
	// the lifetime runs out. Changing the token ends every session at once.
	SessionLifetime time.Duration
}

// Defaults of Options.
const (
	DefaultUnclaimedAfter = time.Minute
	DefaultPageSize       = 50
	// DefaultSessionLifetime is how long a login lasts by default.
	DefaultSessionLifetime = 12 * time.Hour
	// MinSecretLength is the fewest characters a Token or BasicPassword
	// may have: a short one is guessed, however slowly failed logins are
	// let through (FailedLoginEvery).
	MinSecretLength = 16
	// MaxBulk bounds the jobs one bulk action touches; a larger filtered
	// set is acted on in several confirmations.
	MaxBulk = 1000
	// maxWorkerLeases bounds the processing jobs the workers page reads.
	maxWorkerLeases = 5000
)

// ErrNoClient is returned by New without a client.
var ErrNoClient = errors.New("web: no leasehold client")

// handler is the dashboard.
type handler struct {
	client *leasehold.Client
	opts   Options
	secret []byte
	pages  *pages
	log    *slog.Logger
	mux    *http.ServeMux
	// throttle counts failed logins by client address.
	throttle *throttle
}

// New returns the dashboard for client, which needs no workers: an
// operator client (leasehold.NewClient without Workers) is enough. Give
// it the workers' Config.Queues, though: the attention page's watcher
// pass (Client.RescueExpired) applies the client's queue policies, and
// without them it requeues the expired leases of a FlagStuck or
// Reconcile queue instead of flagging or reconciling them.
func New(client *leasehold.Client, opts Options) (http.Handler, error) {
	if client == nil {
		return nil, ErrNoClient
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	secret, err := secretOf(opts.Secret)
	if err != nil {
		return nil, err
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handler{client: client, opts: opts, secret: secret, pages: p, log: log, mux: http.NewServeMux(), throttle: newThrottle()}
	h.routes()
	return h.wrap(), nil
}

// Check returns the error New would return for o's prefix, session
// lifetime and credentials, or nil: a Prefix that is not a clean path (see
// CheckPrefix), a SessionLifetime that is negative or under a second, half
// the basic-auth credentials, or a Token, BasicUser or BasicPassword that
// is only white space (no authentication at all, passed off as one), a
// Token or BasicPassword shorter than MinSecretLength, or a BasicUser no
// client could log in as (see checkBasicUser).
func (o Options) Check() error {
	if err := CheckPrefix(o.Prefix); err != nil {
		return err
	}
	if o.SessionLifetime < 0 || (o.SessionLifetime > 0 && o.SessionLifetime < time.Second) {
		return fmt.Errorf("web: SessionLifetime %v: want at least a second (0 for the default, %v)",
			o.SessionLifetime, DefaultSessionLifetime)
	}
	if (o.BasicUser == "") != (o.BasicPassword == "") {
		return errors.New("web: BasicUser and BasicPassword go together")
	}
	for _, c := range []struct{ name, v string }{{"Token", o.Token}, {"BasicUser", o.BasicUser}, {"BasicPassword", o.BasicPassword}} {
		if c.v != "" && strings.TrimSpace(c.v) == "" {
			return fmt.Errorf("web: %s is blank (only white space): set a real one, or none", c.name)
		}
	}
	for _, c := range []struct{ name, v string }{{"Token", o.Token}, {"BasicPassword", o.BasicPassword}} {
		if n := utf8.RuneCountInString(c.v); n > 0 && n < MinSecretLength {
			return fmt.Errorf("web: %s has %d characters: want at least %d, such as the output of openssl rand -hex 16",
				c.name, n, MinSecretLength)
		}
	}
	return checkBasicUser(o.BasicUser)
}

// checkBasicUser refuses a basic-auth user that holds a colon or a
// control character. Basic authentication (RFC 7617) sends "user:password"
// and the server splits it at the first colon, so a user with a colon
// never matches, and every try counts as a failed login that ends in the
// operator's own address being throttled; the RFC allows no control
// character in the user either.
func checkBasicUser(user string) error {
	if strings.Contains(user, ":") {
		return errors.New("web: BasicUser holds a colon, which basic authentication (RFC 7617) takes for the end of the user: " +
			"no client could log in as it; choose a user without one")
	}
	if i := strings.IndexFunc(user, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(user[i:])
		return fmt.Errorf("web: BasicUser holds the control character %U, which basic authentication (RFC 7617) does not allow: "+
			"no client could log in as it", r)
	}
	return nil
}

// CheckPrefix returns an error unless prefix is empty or a clean absolute
// URL path the dashboard can be mounted at: a leading /, no empty, "." or
// ".." segment, and only unreserved characters and sub-delimiters but ;
// (no space, query, fragment or percent-escape; no ;, which a cookie's
// Path cannot hold, so the login's cookie would not be scoped to the
// prefix). A trailing / is allowed.
func CheckPrefix(prefix string) error {
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("web: Prefix %q must start with /", prefix)
	}
	if path.Clean(p) != p || strings.IndexFunc(p, notPathChar) >= 0 {
		return fmt.Errorf("web: Prefix %q is not a clean URL path (letters, digits, -._~!$&'()*+,=:@ between single slashes)", prefix)
	}
	return nil
}

// notPathChar reports whether r may not appear in a prefix: it is not
// itself in a clean path segment (RFC 3986 pchar without percent-escapes)
// or its separator, or it is ;, which net/http drops from a cookie's Path.
func notPathChar(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	}
	return !strings.ContainsRune("-._~!$&'()*+,=:@/", r)
}

// withDefaults checks o and fills its defaults.
func (o Options) withDefaults() (Options, error) {
	if err := o.Check(); err != nil {
		return o, err
	}
	o.Prefix = strings.TrimSuffix(o.Prefix, "/")
	if o.UnclaimedAfter <= 0 {
		o.UnclaimedAfter = DefaultUnclaimedAfter
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	o.PageSize = min(o.PageSize, MaxBulk)
	if o.SessionLifetime == 0 {
		o.SessionLifetime = DefaultSessionLifetime
	}
	return o, nil
}

// routes registers every page and action on h.mux, without the prefix.
func (h *handler) routes() {
	m := h.mux
	m.HandleFunc("GET /{$}", h.overview)
	m.HandleFunc("GET /jobs", h.jobs)
	m.HandleFunc("GET /jobs/{id}", h.job)
	m.HandleFunc("GET /workers", h.workers)
	m.HandleFunc("GET /attention", h.attention)
	m.HandleFunc("GET /login", h.loginPage)
	m.HandleFunc("POST /login", h.login)
	m.HandleFunc("POST /logout", h.logout)
	m.Handle("GET /static/", noStore(http.FileServerFS(staticFS)))
	// Without it the mux would redirect /static to /static/ itself, out
	// of the prefix it does not know about.
	m.Handle("GET /static", http.RedirectHandler(h.path("/static/"), http.StatusMovedPermanently))
	m.HandleFunc("POST /jobs/{id}/retry", h.mutation(h.retry))
	m.HandleFunc("POST /jobs/{id}/cancel", h.mutation(h.cancel))
	m.HandleFunc("POST /jobs/{id}/delete", h.mutation(h.deleteJob))
	m.HandleFunc("POST /queues/{name}/pause", h.mutation(h.pauseQueue))
	m.HandleFunc("POST /queues/{name}/resume", h.mutation(h.resumeQueue))
	m.HandleFunc("GET /bulk", h.bulkConfirm)
	m.HandleFunc("POST /bulk", h.mutation(h.bulk))
	m.HandleFunc("POST /rescue", h.mutation(h.rescue))
}

// wrap adds, outside the routes: the security headers, the bound on
// request bodies and the parsing of forms, the prefix, the cross-origin
// check and authentication.
func (h *handler) wrap() http.Handler {
	var inner http.Handler = h.mux
	inner = h.authenticate(inner)
	inner = http.NewCrossOriginProtection().Handler(inner)
	if h.opts.Prefix != "" {
		inner = http.StripPrefix(h.opts.Prefix, inner)
	}
	return SecurityHeaders(h.parseForms(inner))
}

// authConfigured reports whether a token or basic-auth credentials are set.
func (h *handler) authConfigured() bool {
	return h.opts.Token != "" || h.opts.BasicUser != ""
}

// canChange reports whether this dashboard accepts changes at all.
func (h *handler) canChange() bool {
	return h.authConfigured() && !h.opts.ReadOnly
}
