package work

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
)

// metricsGrace is how long a scrape still in progress when the client
// has stopped may take to finish: the server then closes its connection,
// so that a hung scrape does not hold up the stop.
const metricsGrace = time.Second

// metricsServer serves the worker's Prometheus metrics at /metrics: the
// client's (leaseholdprom) and the Go runtime's and process's.
type metricsServer struct {
	metrics *leaseholdprom.Metrics
	srv     *http.Server
	served  chan error
}

// startMetrics listens on addr and serves the metrics there, with the
// queue gauges read at most once per queueStats (0: the library's
// default; negative: not read, not exported); it logs the URL, with the
// port the system chose when addr asks for port 0.
func startMetrics(addr string, queueStats time.Duration, logger *slog.Logger) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := leaseholdprom.New(leaseholdprom.Options{Registerer: reg, QueueStatsInterval: queueStats})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", leaseholdprom.Handler(reg))
	s := serveMetrics(ln, mux, m)
	logger.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return s, nil
}

// serveMetrics serves h on ln until close, which also closes m.
func serveMetrics(ln net.Listener, h http.Handler, m *leaseholdprom.Metrics) *metricsServer {
	s := &metricsServer{metrics: m, served: make(chan error, 1),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s
}

// configure adds the metrics' insert middleware to cfg; s may be nil
// (no metrics).
func (s *metricsServer) configure(cfg *leasehold.Config) {
	if s != nil {
		cfg.InsertMiddleware = append(cfg.InsertMiddleware, s.metrics.InsertMiddleware())
	}
}

// attach subscribes the metrics to c's events; s may be nil.
func (s *metricsServer) attach(c *leasehold.Client) error {
	if s == nil {
		return nil
	}
	return s.metrics.Attach(c)
}

// close stops serving and ends the metrics' subscription; s may be nil.
// A scrape in progress gets metricsGrace to finish, then its connection
// is closed, which close reports.
func (s *metricsServer) close() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), metricsGrace)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// Close's only error is the listener's, which Shutdown closed.
		_ = s.srv.Close()
		err = fmt.Errorf("a scrape still running %s after the worker stopped was cut off: %w", metricsGrace, err)
	}
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	s.metrics.Close()
	if err != nil {
		return fmt.Errorf("metrics server: %w", err)
	}
	return nil
}
