package work

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
)

// TestMetricsCloseCutsHungScrape: closing the metrics server, once the
// client has stopped, does not wait for a scrape that hangs: close
// returns and the scrape's connection is closed. (The bounds below only
// keep a broken close from hanging the test: the close gives a scrape
// metricsGrace, far less.)
func TestMetricsCloseCutsHungScrape(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := leaseholdprom.New(leaseholdprom.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	release, entered := make(chan struct{}), make(chan struct{})
	defer close(release)
	s := serveMetrics(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(entered)
		<-release // a scrape that hangs
	}), m)
	scraped := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
		if err == nil {
			_ = resp.Body.Close()
		}
		scraped <- err
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- s.close() }()
	const bound = 20 * time.Second
	select {
	case err := <-closed:
		t.Logf("close: %v", err)
	case <-time.After(bound):
		t.Fatalf("close has not returned after %s while a scrape hangs", bound)
	}
	select {
	case err := <-scraped:
		if err == nil {
			t.Error("the hung scrape got a response")
		}
	case <-time.After(bound):
		t.Fatalf("the hung scrape's connection is still open %s after close returned", bound)
	}
}
