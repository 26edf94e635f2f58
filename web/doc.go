// Package web is leasehold's dashboard: an http.Handler, rendered on the
// server with html/template, that shows each queue, the jobs, the live
// leases by worker instance, what needs attention, and one job's attempt
// history drawn as a lease timeline (one bar per attempt, from its claim
// to its end, with its last heartbeat, owner and outcome). It lets an
// authenticated operator retry and cancel jobs, one at a time or a
// filtered set after a confirmation.
//
// Every asset (templates, stylesheet) is embedded; the pages load nothing
// from elsewhere and run no script. Mount the handler in your own server:
//
//	h, err := web.New(client, web.Options{Token: os.Getenv("DASHBOARD_TOKEN"), Prefix: "/jobs-admin"})
//	mux.Handle("/jobs-admin/", h)
//
// or run it on its own with `leasehold serve`. The client needs no
// workers, but the workers' Config.Queues: the attention page's watcher
// pass applies its queue policies (see New).
//
// Security: when Options names a token or basic-auth credentials, every
// page needs them; without either, the dashboard is read-only, and an
// application that serves it so (on loopback) should refuse requests whose
// Host header is not a loopback name, as `leasehold serve` does: else a
// web page whose own name rebinds to 127.0.0.1 (DNS rebinding) reads the
// dashboard as its own origin. A browser that typed the token stays
// logged in for Options.SessionLifetime. The
// token and the password have at least MinSecretLength characters, and an
// address that fails FailedLoginBurst times is held to one attempt per
// FailedLoginEvery (answered 429 until then). Every
// change is a POST; a browser's form carries a CSRF token, an HMAC (under
// Options.Secret) of a random cookie of that browser, and a request with
// the bearer token needs none (no browser adds that header by itself).
// Cross-origin requests are refused (Sec-Fetch-Site and
// Origin, see net/http.CrossOriginProtection). Pages are sent with a
// Content-Security-Policy that allows no script and no inline style,
// frame-ancestors 'none' and base-uri 'none', and nosniff; html/template escapes everything a
// job carries (arguments, metadata, errors, names). The handler reads
// every POST's form before authentication: serve it from an http.Server
// with ReadTimeout and WriteTimeout set (leasehold serve: 30 s and 2
// minutes), so that a client that sends or reads a byte at a time cannot
// hold connections open.
package web
