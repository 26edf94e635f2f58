package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// Cookie names of the dashboard.
const (
	sessionCookie = "leasehold_session"
	csrfCookie    = "leasehold_csrf"
	csrfField     = "csrf"
)

// contentSecurityPolicy allows the page's own stylesheet and images and
// nothing else: no script at all, no inline style, no framing.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'"

// SecurityHeaders sets, on every answer of next, the headers the
// dashboard's own answers carry: a Content-Security-Policy that allows no
// script, no inline style and no framing, X-Frame-Options: DENY,
// X-Content-Type-Options: nosniff, Referrer-Policy: same-origin and
// Cache-Control: no-store. The handler New returns has them already; wrap
// the rest of a server in it (its redirects, 404s, metrics) so that every
// answer of the server carries them too.
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// noStore keeps Cache-Control: no-store on the answers of next, which may
// drop it: http.FileServer removes Cache-Control from its error answers
// (since Go 1.23), so that a 404 of a static file would be cacheable.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&noStoreWriter{ResponseWriter: w}, r)
	})
}

// noStoreWriter sets Cache-Control: no-store when the header is written,
// if the handler removed it.
type noStoreWriter struct {
	http.ResponseWriter
	wrote bool
}

// WriteHeader sets Cache-Control: no-store, unless set, and writes the
// header.
func (w *noStoreWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		if w.Header().Get("Cache-Control") == "" {
			w.Header().Set("Cache-Control", "no-store")
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

// Write writes the header first, as WriteHeader does, when not yet
// written.
func (w *noStoreWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *noStoreWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// maxFormBytes bounds the body of a POST. The largest form the dashboard
// posts is a bulk action's: up to MaxBulk ids, as many completed_id, the
// CSRF token and the action, under 64 KiB.
const maxFormBytes = 1 << 20

// formContentType is the only body a POST may carry: the dashboard's forms
// post nothing else.
const formContentType = "application/x-www-form-urlencoded"

// parseForms reads the form of every POST, before authentication and
// before any handler, so that no handler parses a body of its own: a body
// that is not URL-encoded (multipart/form-data above all, whose file parts
// net/http would spill to disk) is answered 415, one larger than
// maxFormBytes 413, one that does not parse 400. A POST without a
// Content-Type has an empty form. Other methods' bodies are bounded too,
// though no route reads them.
func (h *handler) parseForms(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if status, msg := readForm(r); status != 0 {
			h.fail(w, r, status, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readForm parses the URL-encoded body of the POST r into r.PostForm and
// r.Form; it returns the status and message of the answer that refuses
// it, or 0.
func readForm(r *http.Request) (int, string) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != formContentType {
			return http.StatusUnsupportedMediaType, "a form must be posted as " + formContentType
		}
	}
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return http.StatusRequestEntityTooLarge, fmt.Sprintf("the form is larger than %d bytes", maxFormBytes)
		}
		return http.StatusBadRequest, "the form does not parse: " + err.Error()
	}
	return 0, ""
}

// secretOf returns the CSRF key: the configured one, or 32 random bytes.
func secretOf(configured []byte) ([]byte, error) {
	if len(configured) > 0 {
		if len(configured) < 16 {
			return nil, errors.New("web: Secret is shorter than 16 bytes")
		}
		return configured, nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return b, nil
}

// mac returns the hex HMAC-SHA256 of msg under key.
func mac(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// equal compares two secrets in constant time.
func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// sessionValue is the session cookie of a browser that typed the token at
// issued: the time in Unix seconds, a dot, and an HMAC of that time under
// the token. A cookie is good until Options.SessionLifetime after the
// time it names (validSession); changing the time breaks the HMAC, and
// changing the token makes every cookie worthless.
func (h *handler) sessionValue(issued time.Time) string {
	t := strconv.FormatInt(issued.Unix(), 10)
	return t + "." + mac([]byte(h.opts.Token), sessionLabel+t)
}

// hasSession reports whether r carries a valid session cookie.
func (h *handler) hasSession(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	return err == nil && h.validSession(c.Value, time.Now())
}

// sessionLabel starts the message a session cookie's HMAC is taken of, so
// that it is an HMAC of nothing else the token keys.
const sessionLabel = "leasehold web session issued at "

// sessionSkew is how far in the future a session may have been issued:
// the clocks of several instances behind one load balancer differ a
// little.
const sessionSkew = time.Minute

// validSession reports whether value is a session cookie of this token,
// issued no more than Options.SessionLifetime before now (and not more
// than sessionSkew after it).
func (h *handler) validSession(value string, now time.Time) bool {
	t, sum, ok := strings.Cut(value, ".")
	if !ok || h.opts.Token == "" {
		return false
	}
	secs, err := strconv.ParseInt(t, 10, 64)
	if err != nil || !equal(sum, mac([]byte(h.opts.Token), sessionLabel+t)) {
		return false
	}
	issued := time.Unix(secs, 0)
	return !issued.After(now.Add(sessionSkew)) && now.Before(issued.Add(h.opts.SessionLifetime))
}

// authenticate lets a request through when authentication is off, for the
// login page and the stylesheet, or when the request carries a session
// cookie, the token (bearer header) or the basic-auth credentials.
// Otherwise a GET that sent no Authorization header, to a dashboard with
// a token and no basic auth, is redirected to the login page; every other
// request is answered 401 (with a Basic challenge when basic auth is
// configured, and a Bearer one when a token is): a client that sent
// credentials learns they were wrong rather than being shown a form.
// Wrong credentials in the Authorization header count against the
// address's allowance of failed attempts, and once it is used up they are
// answered 429 unchecked; a session cookie still lets its browser in.
func (h *handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.authConfigured() || r.URL.Path == "/login" || strings.HasPrefix(r.URL.Path, "/static/") ||
			h.hasSession(r) {
			next.ServeHTTP(w, r)
			return
		}
		presented := r.Header.Get("Authorization") != ""
		if presented && h.throttled(w, r) {
			return
		}
		if h.credentialsValid(r) {
			next.ServeHTTP(w, r)
			return
		}
		if presented {
			h.throttle.failed(r)
		}
		if h.opts.BasicUser != "" {
			w.Header().Add("WWW-Authenticate", `Basic realm="leasehold", charset="UTF-8"`)
		}
		if h.opts.Token != "" {
			w.Header().Add("WWW-Authenticate", `Bearer realm="leasehold"`)
		}
		if !presented && r.Method == http.MethodGet && h.opts.Token != "" && h.opts.BasicUser == "" {
			http.Redirect(w, r, h.loginLink(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h.fail(w, r, http.StatusUnauthorized, "authentication required: log in with the dashboard's token or credentials")
	})
}

// credentialsValid reports whether r's Authorization header carries the
// token or the basic-auth credentials.
func (h *handler) credentialsValid(r *http.Request) bool {
	if h.bearer(r) {
		return true
	}
	if h.opts.BasicUser != "" {
		u, p, ok := r.BasicAuth()
		// Both compared, so the time taken says nothing of which was wrong.
		uok, pok := equal(u, h.opts.BasicUser), equal(p, h.opts.BasicPassword)
		return ok && uok && pok
	}
	return false
}

// bearer reports whether r authenticated with the Authorization header's
// token, which a browser never sends by itself: such a request cannot be
// forged cross-site and needs no CSRF token.
func (h *handler) bearer(r *http.Request) bool {
	tok, ok := bearerToken(r.Header.Get("Authorization"))
	return h.opts.Token != "" && ok && equal(tok, h.opts.Token)
}

// bearerToken returns the token of an Authorization header of the Bearer
// scheme. The scheme's name is matched in any case (RFC 7235, as
// r.BasicAuth does for Basic), and spaces before the token are skipped.
func bearerToken(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(tok, " "), true
}

// csrfToken returns the CSRF token of r's browser, setting its cookie on
// w when it has none yet: the token is an HMAC of the cookie under the
// handler's secret, so a page of another site can neither read nor make it.
// A browser that holds the cookie sends it on every request of the
// dashboard's site and on top-level navigations from other sites (it is
// SameSite=Lax, see cookie), so a new cookie, which would void the tokens
// of the forms open in its other tabs, is set only for a browser that
// had none. A cookieless request from another site's page (an image, a
// fetch) gets one too, but a browser does not store a SameSite cookie
// from such an answer.
func (h *handler) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 64 {
		return mac(h.secret, c.Value)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	v := hex.EncodeToString(b)
	http.SetCookie(w, h.cookie(r, csrfCookie, v))
	return mac(h.secret, v)
}

// csrfValid reports whether the POST r carries its browser's CSRF token.
func (h *handler) csrfValid(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		return false
	}
	return equal(r.PostForm.Get(csrfField), mac(h.secret, c.Value))
}

// cookie returns a cookie scoped to the dashboard's path, HttpOnly and
// SameSite=Lax, Secure over TLS or when Options.SecureCookies says the
// dashboard is served over HTTPS by a proxy.
//
// Lax, not Strict: under Strict a link to the dashboard followed from
// another site (an alert mail, a chat) arrives with neither cookie, so a
// logged-in operator is sent to the login page, and that page's new CSRF
// cookie voids every form open in other tabs. Lax sends the cookies on
// such top-level GETs only, and that is safe here: a GET changes nothing,
// and every change is a POST that needs the HMAC CSRF token (or the
// bearer header) and passes http.CrossOriginProtection, and Lax cookies
// are not sent on another site's POSTs, frames or fetches.
func (h *handler) cookie(r *http.Request, name, value string) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: h.path("/"), HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil || h.opts.SecureCookies,
	}
}

// mutation guards a change: refused without authentication configured,
// in read-only mode, and without a valid CSRF token (unless the request
// carries the bearer token).
func (h *handler) mutation(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !h.authConfigured():
			h.fail(w, r, http.StatusForbidden, "changes need authentication: configure a token or basic-auth credentials")
		case h.opts.ReadOnly:
			h.fail(w, r, http.StatusForbidden, "this dashboard is read-only")
		case !h.bearer(r) && !h.csrfValid(r):
			h.fail(w, r, http.StatusForbidden, "missing or invalid CSRF token: reload the page and try again")
		default:
			fn(w, r)
		}
	}
}

// loginPage shows the token form.
func (h *handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if h.opts.Token == "" {
		h.fail(w, r, http.StatusNotFound, "this dashboard has no token to log in with")
		return
	}
	h.render(w, r, "login", "Log in", loginData{Next: nextPath(r.URL.Query().Get(nextField))})
}

// nextField is the login page's parameter, and its form's field, that
// names the page to show after the login: a path under the dashboard's
// prefix, without the prefix, with its query.
const nextField = "next"

// loginData is the login page's: whether the token typed was wrong, and
// the page to go to after the login ("" for the overview).
type loginData struct {
	Failed bool
	Next   string
}

// loginLink returns the login page's path, naming the page next (a path
// under the prefix, with its query) to show after the login; next is
// left out when it is the overview or is not such a path.
func (h *handler) loginLink(next string) string {
	next = nextPath(next)
	if next == "" || next == "/" {
		return h.path("/login")
	}
	return h.link("/login", url.Values{nextField: {next}})
}

// nextPath returns next when it is a path of the dashboard (without the
// prefix, which afterLogin adds) with its query, else "": it must start
// with a single slash, carry no scheme, host, backslash or fragment, and
// be a clean path, so that the prefix added in front of it keeps it on
// this site and under the prefix, whatever a forged link to the login
// page names (//evil.example, https://evil.example, /\evil.example,
// /../other).
func nextPath(next string) string {
	p, _, _ := strings.Cut(next, "?")
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\#") {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		path.Clean(u.Path) != u.Path || strings.HasPrefix(u.EscapedPath(), "//") {
		return ""
	}
	return next
}

// afterLogin is where the login sends the browser: the page next names
// under the prefix (see nextPath), else the overview.
func (h *handler) afterLogin(next string) string {
	if next = nextPath(next); next == "" {
		return h.path("/")
	}
	return h.path(next)
}

// login checks the typed token and sets the session cookie, which the
// browser keeps for Options.SessionLifetime.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	if h.opts.Token == "" {
		h.fail(w, r, http.StatusNotFound, "this dashboard has no token to log in with")
		return
	}
	if !h.csrfValid(r) {
		h.fail(w, r, http.StatusForbidden, "missing or invalid CSRF token: reload the page and try again")
		return
	}
	if h.throttled(w, r) {
		return
	}
	if !equal(r.PostForm.Get("token"), h.opts.Token) {
		h.throttle.failed(r)
		h.renderStatus(w, r, http.StatusUnauthorized, "login", "Log in",
			loginData{Failed: true, Next: nextPath(r.PostForm.Get(nextField))})
		return
	}
	c := h.cookie(r, sessionCookie, h.sessionValue(time.Now()))
	c.MaxAge = int(min(h.opts.SessionLifetime, maxCookieAge) / time.Second)
	http.SetCookie(w, c)
	http.Redirect(w, r, h.afterLogin(r.PostForm.Get(nextField)), http.StatusSeeOther)
}

// maxCookieAge is the longest Max-Age browsers keep (about 400 days); a
// longer SessionLifetime still holds on the server.
const maxCookieAge = 400 * 24 * time.Hour

// logout drops the browser's session cookie. A copy of it kept elsewhere
// stays valid until its SessionLifetime runs out, or the token changes.
func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	if !h.csrfValid(r) {
		h.fail(w, r, http.StatusForbidden, "missing or invalid CSRF token: reload the page and try again")
		return
	}
	c := h.cookie(r, sessionCookie, "")
	c.MaxAge = -1
	http.SetCookie(w, c)
	http.Redirect(w, r, h.path("/login"), http.StatusSeeOther)
}
