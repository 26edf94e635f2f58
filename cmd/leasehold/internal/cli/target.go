package cli

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvDatabaseURL names the variable read when --db is not given.
const EnvDatabaseURL = "LEASEHOLD_DATABASE_URL"

// DefaultPath is the SQLite file used when neither --db nor
// LEASEHOLD_DATABASE_URL is set.
const DefaultPath = "leasehold.db"

// Dialect names the kind of database behind a Target.
type Dialect string

// The supported dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Target is a parsed database location.
type Target struct {
	Dialect Dialect
	// URL is the PostgreSQL connection URL, as given.
	URL string
	// Path is the SQLite file.
	Path string
	// Default is set when the target is DefaultPath because nothing was
	// configured.
	Default bool
}

var schemePattern = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// keywordDSN matches a libpq keyword/value connection string ("host=db
// dbname=app password=…"), which a plain path would otherwise take for
// an SQLite file's name: created, migrated, and printed in every log line
// with its password.
var keywordDSN = regexp.MustCompile(`(^|\s)(host|hostaddr|port|dbname|user|password|passfile|sslmode|service|options|application_name|connect_timeout|target_session_attrs)\s*=`)

// ParseTarget parses a database location: postgres:// or postgresql://
// URLs select PostgreSQL; sqlite:PATH, sqlite://PATH, file:PATH and plain
// paths select an SQLite file. An empty string is the default file. Other
// URL schemes, malformed PostgreSQL URLs and a plain path that looks like
// a PostgreSQL keyword/value string are usage errors.
func ParseTarget(raw string) (Target, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return Target{Dialect: SQLite, Path: DefaultPath, Default: true}, nil
	}
	lower := strings.ToLower(s)
	if strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		return parsePostgres(s)
	}
	path := s
	for _, prefix := range []string{"sqlite://", "sqlite:", "file://", "file:"} {
		if strings.HasPrefix(lower, prefix) {
			path = s[len(prefix):]
			break
		}
	}
	if path == s {
		if m := schemePattern.FindStringSubmatch(s); m != nil {
			return Target{}, Usagef("unsupported database URL scheme %q (want postgres://, postgresql://, sqlite:PATH, file:PATH or a file path)", m[1])
		}
		if keywordDSN.MatchString(s) {
			// Not echoed: such a string often carries password=.
			return Target{}, Usagef("the database location looks like a PostgreSQL keyword/value connection string (host=… dbname=…): give a postgres:// URL instead, or sqlite:PATH for a file of that name")
		}
	}
	if path == "" {
		return Target{}, Usagef("database URL %q names no file", raw)
	}
	if strings.ContainsRune(path, '?') {
		return Target{}, Usagef("database URL %q: an SQLite path takes no query parameters (the driver sets its own): name the file alone", raw)
	}
	return Target{Dialect: SQLite, Path: path}, nil
}

func parsePostgres(s string) (Target, error) {
	scheme, rest, _ := strings.Cut(s, "://")
	s = strings.ToLower(scheme) + "://" + rest
	if _, err := url.Parse(s); err != nil {
		return Target{}, Usagef("malformed database URL %s: %s", redactURL(s), urlErrReason(err))
	}
	if _, err := pgxpool.ParseConfig(s); err != nil {
		return Target{}, Usagef("malformed database URL: %v", err)
	}
	return Target{Dialect: Postgres, URL: s}, nil
}

// urlErrReason drops the URL (which may hold a password) from a parse
// error.
func urlErrReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "cannot parse"
}

// String shows the target without its password: a URL for PostgreSQL,
// sqlite:PATH for SQLite.
func (t Target) String() string {
	if t.Dialect == Postgres {
		return redactURL(t.URL)
	}
	return "sqlite:" + t.Path
}

// passwordMask replaces a password in the text of a URL.
const passwordMask = "xxxxx"

// isSecretParam reports whether a connection parameter, named as pgx
// names it once decoded, carries a secret.
func isSecretParam(key string) bool {
	return key == "password" || key == "sslpassword"
}

// redactURL returns the PostgreSQL URL s with the password of its
// userinfo and the values of its password and sslpassword parameters
// replaced by "xxxxx", and the rest of the text as it was. It reads s as
// pgx does, not as net/url would: for net/url a raw '#' in a password
// starts a fragment, which would leave the password in plain sight (and
// the user and the first part of the password taken for a host and port).
// It also serves URLs that pgx refuses, for error messages.
func redactURL(s string) string {
	start, end, ok := userinfoSpan(s)
	rest := s
	var b strings.Builder
	if ok {
		user, _, hasPassword := strings.Cut(s[start:end], ":")
		b.WriteString(s[:start])
		b.WriteString(user)
		if hasPassword {
			b.WriteString(":" + passwordMask)
		}
		rest = s[end:] // from the '@'
	}
	q := queryIndex(s)
	if q < 0 {
		b.WriteString(rest)
		return b.String()
	}
	b.WriteString(s[len(s)-len(rest) : q+1])
	pairs := strings.Split(s[q+1:], "&")
	for i, pair := range pairs {
		if key, _, found := strings.Cut(pair, "="); found && isSecretParam(queryKey(key)) {
			pairs[i] = key + "=" + passwordMask
		}
	}
	b.WriteString(strings.Join(pairs, "&"))
	return b.String()
}

// userinfoSpan returns where the user and password of the URL s start
// and end (at the '@'), found as pgx finds them: after the scheme's "://",
// up to the first '@' met before any '/'. Anything may come between,
// a '#' or a '?' included. ok is false when s has no userinfo.
func userinfoSpan(s string) (start, end int, ok bool) {
	i := strings.Index(s, "://")
	if i < 0 {
		return 0, 0, false
	}
	start = i + len("://")
	j := strings.IndexAny(s[start:], "@/")
	if j < 0 || s[start+j] != '@' {
		return 0, 0, false
	}
	return start, start + j, true
}

// queryIndex returns the index of the '?' that starts the query of the
// PostgreSQL URL s as pgx reads it (the first '?' after the userinfo: no
// host, port or database name holds one), or -1 when s has no query.
func queryIndex(s string) int {
	from := 0
	if _, end, ok := userinfoSpan(s); ok {
		from = end + 1
	} else if i := strings.Index(s, "://"); i >= 0 {
		from = i + len("://")
	}
	i := strings.IndexByte(s[from:], '?')
	if i < 0 {
		return -1
	}
	return from + i
}

// queryKey decodes a query parameter's name as pgx does: percent-decoded,
// spaces around it dropped, '+' kept. A name that does not decode (pgx
// refuses the URL) is returned as written.
func queryKey(raw string) string {
	key, err := url.PathUnescape(raw)
	if err != nil {
		return raw
	}
	return strings.Trim(key, " ")
}

// queryHas reports whether the PostgreSQL URL s sets the query parameter
// key, read as pgx reads it.
func queryHas(s, key string) bool {
	q := queryIndex(s)
	if q < 0 {
		return false
	}
	for _, pair := range strings.Split(s[q+1:], "&") {
		if k, _, _ := strings.Cut(pair, "="); queryKey(k) == key {
			return true
		}
	}
	return false
}
