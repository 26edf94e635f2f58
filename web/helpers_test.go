package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
	"github.com/leasehold/leasehold/web"
)

// testToken is the dashboard's token in the tests.
const testToken = "s3cret-token-of-the-tests"

// testPassword is the basic-auth password of the tests.
const testPassword = "correct-horse-battery"

// drivers runs fn once per database: SQLite always, PostgreSQL when
// LEASEHOLD_TEST_DATABASE_URL is set.
func drivers(t *testing.T, fn func(t *testing.T, d driver.Driver)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, sqlitetest.Open(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, pgtest.Open(t)) })
}

// env is a dashboard on a real database, served by httptest.
type env struct {
	t      *testing.T
	d      driver.Driver
	client *leasehold.Client
	srv    *httptest.Server
	// http keeps the cookies of one browser.
	http *http.Client
	base string
}

// newEnv serves the dashboard on d with opts (the prefix is where it is
// mounted).
func newEnv(t *testing.T, d driver.Driver, opts web.Options) *env {
	t.Helper()
	c, err := leasehold.NewClient(leasehold.Config{Driver: d})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	h, err := web.New(c, opts)
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle(opts.Prefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &env{t: t, d: d, client: c, srv: srv, http: hc, base: srv.URL + opts.Prefix}
}

// insert adds a job of kind with args JSON in queue.
func (e *env) insert(queue, kind, args string) *leasehold.JobRow {
	e.t.Helper()
	res, err := e.client.Insert(e.t.Context(), leasehold.RawArgs{KindName: kind, JSON: json.RawMessage(args)},
		&leasehold.InsertOpts{Queue: queue})
	if err != nil {
		e.t.Fatalf("Insert: %v", err)
	}
	return res.Job
}

// claim leases job id for owner.
func (e *env) claim(id int64, owner string, ttl time.Duration, takeOver bool) *leasehold.JobRow {
	e.t.Helper()
	j, err := e.d.ClaimByID(e.t.Context(), &driver.ClaimByIDParams{ID: id, Owner: owner, TTL: ttl, TakeOver: takeOver})
	if err != nil || j == nil {
		e.t.Fatalf("ClaimByID(%d, %s) = %v, %v", id, owner, j, err)
	}
	return j
}

// finish writes outcome for the lease j, fenced; it reports whether the
// fence matched.
func (e *env) finish(j *leasehold.JobRow, outcome leasehold.Outcome, errText string) bool {
	e.t.Helper()
	ids, err := e.d.Finish(e.t.Context(), nil, []*driver.FinishParams{{ID: j.ID, Owner: j.LeaseOwner, Attempt: j.Attempt,
		Transition: statemachine.Finish(statemachine.Ending{Outcome: outcome, Error: errText})}})
	if err != nil {
		e.t.Fatalf("Finish: %v", err)
	}
	return len(ids) == 1
}

// ended inserts a job into queue, claims it and ends its attempt with
// outcome.
func (e *env) ended(queue string, outcome leasehold.Outcome) *leasehold.JobRow {
	e.t.Helper()
	j := e.insert(queue, "k", `{}`)
	if !e.finish(e.claim(j.ID, "w", time.Minute, false), outcome, "boom") {
		e.t.Fatalf("Finish of job %d refused", j.ID)
	}
	return j
}

// takenOver makes a job whose first lease (owner-a) expired and was taken
// over by owner-b, and whose late completion by owner-a was refused.
func (e *env) takenOver() *leasehold.JobRow {
	e.t.Helper()
	j := e.insert("payments", "payment.charge", `{"payment_id":"p-1"}`)
	a := e.claim(j.ID, "owner-a", 300*time.Millisecond, false)
	if hb, err := e.d.Heartbeat(e.t.Context(), &driver.HeartbeatParams{Owner: "owner-a", TTL: 300 * time.Millisecond,
		Leases: []driver.LeaseRef{{ID: a.ID, Attempt: a.Attempt}}}); err != nil || len(hb) != 1 {
		e.t.Fatalf("Heartbeat = %v, %v", hb, err)
	}
	time.Sleep(400 * time.Millisecond)
	e.claim(j.ID, "owner-b", time.Minute, true)
	if e.finish(a, leasehold.OutcomeCompleted, "") {
		e.t.Fatalf("the late completion of owner-a was accepted")
	}
	return j
}

// get fetches path (under the prefix) and returns status and body.
func (e *env) get(path string, hdr ...string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodGet, e.base+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return e.do(req)
}

// post sends form to path (under the prefix), with extra headers hdr
// (name, value, ...), and returns status and body.
func (e *env) post(path string, form url.Values, hdr ...string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return e.do(req)
}

func (e *env) do(req *http.Request) (int, string) {
	e.t.Helper()
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// mustGet fetches path and fails unless it answers 200.
func (e *env) mustGet(path string) string {
	e.t.Helper()
	status, body := e.get(path)
	if status != http.StatusOK {
		e.t.Fatalf("GET %s = %d:\n%s", path, status, body)
	}
	return body
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// hiddenRE matches a hidden input of a form.
var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// formOf returns the hidden inputs of the forms of body, as a browser
// posts them.
func formOf(body string) url.Values {
	form := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(body, -1) {
		form.Add(m[1], m[2])
	}
	return form
}

// csrf returns the CSRF token of the page at path.
func (e *env) csrf(path string) string {
	e.t.Helper()
	_, body := e.get(path)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("no CSRF token on %s:\n%s", path, body)
	}
	return m[1]
}

// login logs the browser in with the token.
func (e *env) login() {
	e.t.Helper()
	status, body := e.post("/login", url.Values{"csrf": {e.csrf("/login")}, "token": {testToken}})
	if status != http.StatusSeeOther {
		e.t.Fatalf("login = %d:\n%s", status, body)
	}
}

// state returns the stored state of job id.
func (e *env) state(id int64) leasehold.JobState {
	e.t.Helper()
	j, err := e.d.GetJob(e.t.Context(), id)
	if err != nil {
		e.t.Fatalf("GetJob(%d): %v", id, err)
	}
	return j.State
}

// jobIDs returns the ids linked from the jobs table of body, in order.
func jobIDs(body string) []string {
	table := body
	if i := strings.Index(body, `id="jobs"`); i >= 0 {
		table = body[i:]
	} else {
		return nil
	}
	var out []string
	for _, m := range jobLinkRE.FindAllStringSubmatch(table, -1) {
		out = append(out, m[1])
	}
	return out
}

var jobLinkRE = regexp.MustCompile(`<td class="num"><a href="[^"]*/jobs/(\d+)">`)

// sqlitetestOpen is sqlitetest.Open.
func sqlitetestOpen(t *testing.T) driver.Driver { return sqlitetest.Open(t) }
