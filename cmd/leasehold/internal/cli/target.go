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
		return Target{}, Usagef("malformed database URL %s: %s", redactRaw(s), urlErrReason(err))
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
		u, err := url.Parse(t.URL)
		if err != nil {
			return redactRaw(t.URL)
		}
		return Redact(u)
	}
	return "sqlite:" + t.Path
}

// secretParams are the connection parameters that carry a secret.
var secretParams = []string{"password", "sslpassword"}

// Redact returns u as a string with its password, in the userinfo or as
// a password or sslpassword parameter, replaced by "xxxxx".
func Redact(u *url.URL) string {
	c := *u
	if u.User != nil {
		if _, has := u.User.Password(); has {
			c.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	masked := false
	for _, p := range secretParams {
		if q.Has(p) {
			q.Set(p, "xxxxx")
			masked = true
		}
	}
	if masked {
		c.RawQuery = q.Encode()
	}
	return c.String()
}

var userinfoPattern = regexp.MustCompile(`://[^@/]*@`)

// redactRaw hides the userinfo of a URL that does not parse.
func redactRaw(s string) string {
	return userinfoPattern.ReplaceAllString(s, "://xxxxx@")
}
