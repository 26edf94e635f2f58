package web

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/leasehold/leasehold/view"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageNames are the templates that are whole pages (each with layout.html).
var pageNames = []string{"overview", "jobs", "job", "workers", "attention", "bulk", "done", "login", "error"}

// pages holds one parsed template per page.
type pages struct {
	byName map[string]*template.Template
}

// loadPages parses every page with the layout.
func loadPages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", name, err)
		}
		p.byName[name] = t
	}
	if _, err := fs.Stat(staticFS, "static/style.css"); err != nil {
		return nil, fmt.Errorf("web: stylesheet: %w", err)
	}
	return p, nil
}

// funcs are the helpers the templates call.
var funcs = template.FuncMap{
	"ago":     ago,
	"seconds": func(s float64) string { return ago(time.Duration(s * float64(time.Second))) },
	// "expiredFor" is the time since a lease with left seconds left ran out.
	"expiredFor": func(left float64) string { return ago(time.Duration(-left * float64(time.Second))) },
	"clock":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") },
	"clockPtr":   clockPtr,
	"pretty":     pretty,
	"short":      short,
	"args":       subArgs,
	// "segment" escapes a name for one segment of a path: a queue name
	// may hold "/", which html/template leaves as is in a path.
	"segment": url.PathEscape,
}

// sub is what a nested template receives: the page, a list and a state.
type sub struct {
	Page  page
	Jobs  []view.JobView
	State string
}

// subArgs bundles a nested template's arguments.
func subArgs(p page, jobs []view.JobView, state string) sub {
	return sub{Page: p, Jobs: jobs, State: state}
}

// page is what every template receives: the layout's fields and the
// page's own Data.
type page struct {
	Title  string
	Active string
	Prefix string
	CSRF   string
	// CanChange is set when the dashboard accepts changes (authentication
	// configured, not read-only): the templates show the buttons then.
	CanChange bool
	ReadOnly  bool
	// LoggedIn is set for a browser holding the session cookie.
	LoggedIn bool
	Data     any
}

// render writes the page name with data, status 200.
func (h *handler) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	h.renderStatus(w, r, http.StatusOK, name, title, data)
}

// renderStatus writes the page name with data and status, or a bare 500
// when the template fails.
func (h *handler) renderStatus(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	p := page{
		Title: title, Active: name, Prefix: h.opts.Prefix, CSRF: h.csrfToken(w, r), CanChange: h.canChange(),
		ReadOnly: !h.canChange(), LoggedIn: h.hasSession(r), Data: data,
	}
	var buf bytes.Buffer
	if err := h.pages.byName[name].Execute(&buf, p); err != nil {
		h.log.ErrorContext(r.Context(), "web: render", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// errorData is the error page's.
type errorData struct {
	Status  int
	Message string
}

// fail answers with status and an error page saying msg.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.renderStatus(w, r, status, "error", http.StatusText(status), errorData{Status: status, Message: msg})
}

// failErr answers err with status. Below 500 (invalid input, a state
// that refuses a change) the page says err's text. From 500 on the page
// names a random error id only, and err is logged under that id: a
// driver's error can carry SQL, a host, a port, a user, a database name
// or a file path, which are no business of the browser.
func (h *handler) failErr(w http.ResponseWriter, r *http.Request, status int, err error) {
	if status < http.StatusInternalServerError {
		h.fail(w, r, status, err.Error())
		return
	}
	id := errorID()
	h.log.ErrorContext(r.Context(), "web: request failed", "error_id", id, "path", r.URL.Path, "err", err)
	h.fail(w, r, status, fmt.Sprintf("the request failed (error %s); the server's log has the details", id))
}

// errorID returns a random id of 8 hex digits that names one failed
// request on its page and in the log.
func errorID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return hex.EncodeToString(b[:])
}

// path returns p under the handler's prefix.
func (h *handler) path(p string) string { return h.opts.Prefix + p }

// ago writes a duration for people: 450ms, 12.3s, 4m05s, 3h12m, 2d04h.
func ago(d time.Duration) string {
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	switch {
	case d < time.Second:
		return neg + strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return neg + strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%s%dm%02ds", neg, int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%s%dh%02dm", neg, int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%s%dd%02dh", neg, int(d.Hours())/24, int(d.Hours())%24)
}

// clockPtr formats an optional time, "" for nil.
func clockPtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000")
}

// short cuts s to n runes, with an ellipsis.
func short(n int, s string) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
