package pgdriver_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/pgdriver/pgtest"
)

// TestOpenBoundsThePing: the pools Open makes give up the health check of
// an idle connection after 5 s (pgxpool's default is no bound, which
// leaves a call without a deadline waiting on a vanished server as long
// as TCP retransmits), unless the URL sets pool_ping_timeout.
func TestOpenBoundsThePing(t *testing.T) {
	url := pgtest.URL(t)
	if got := pgtest.OpenURL(t, url).Pool().Config().PingTimeout; got != 5*time.Second {
		t.Errorf("PingTimeout of Open's pool = %v, want 5s", got)
	}
	if got := pgtest.OpenURL(t, url+"&pool_ping_timeout=250ms").Pool().Config().PingTimeout; got != 250*time.Millisecond {
		t.Errorf("PingTimeout of Open's pool, URL with pool_ping_timeout=250ms = %v, want 250ms", got)
	}
}
