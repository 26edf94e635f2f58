package chaos

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// harness is one chaos run.
type harness struct {
	o     Options
	run   string // random id: names the schema, the owners and the payments
	start time.Time
	rng   *mrand.Rand
	outMu sync.Mutex

	ns       *namespace
	db       *cli.DB           // the orchestrator's connection
	client   *leasehold.Client // operator client: inserts and counts
	provider *payments.Provider
	trap     *fleet.Trap // catches workers mid-charge for the freezes
	fleet    *fleet.Fleet
	slots    []*slot
	net      *netState  // the TCP proxy of the network faults, if any
	hosts    *netHosts  // the namespaces and server of a namespace-mode run
	pair     *pair      // the primary and standby of a failover run
	commits  *commitLog // the failover run's acknowledged commits
	// failoverFigures is set by the loop once the failover is over.
	failoverFigures *FailoverFigures
	facts           facts

	sched schedule
}

// Run runs the harness: setup, workers under faults until every job is
// finished (or Timeout), then the checks. The report says which invariants
// held; an error means the run itself could not be carried out.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	var err error
	if o.NetMode, err = resolveNetMode(ctx, o); err != nil {
		return nil, err
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("chaos: run id: %w", err)
	}
	if o.Seed == 0 {
		o.Seed = binary.LittleEndian.Uint64(b[:])
	}
	h := &harness{
		o: o, run: hex.EncodeToString(b[:3]), start: time.Now(),
		rng:  mrand.New(mrand.NewPCG(o.Seed, o.Seed>>1|1)),
		trap: fleet.NewTrap(o.StallProb, o.Seed, nil),
	}
	h.fleet = fleet.New(h.trap)
	h.facts.init()
	defer h.teardown()
	if err := h.setup(ctx); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	loopErr := h.loop(runCtx)
	if ctx.Err() != nil {
		return nil, errors.New("chaos: interrupted")
	}
	h.finishFaults(ctx)
	if h.hosts != nil {
		if err := h.checkSessions(ctx, "end"); err != nil {
			return nil, err
		}
	}
	h.stopWorkers()
	rep, err := h.check(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	if loopErr != nil {
		rep.Problems = append(rep.Problems, loopErr.Error())
	}
	rep.Seconds = time.Since(h.start).Seconds()
	h.ns.keep = h.ns.keep || o.Keep || !rep.OK()
	rep.Kept = h.ns.keptAs()
	if rep.Kept != "" && h.hosts != nil {
		rep.Kept += " on the run's server, stopped, in " + h.hosts.srv.DataDir + " (until the next namespace-mode run)"
	}
	return rep, nil
}

// logf prints one timestamped line of the schedule.
func (h *harness) logf(format string, args ...any) {
	h.outMu.Lock()
	defer h.outMu.Unlock()
	fmt.Fprintf(h.o.Out, "%8.3fs  %s\n", time.Since(h.start).Seconds(), fmt.Sprintf(format, args...))
}

func (h *harness) setup(ctx context.Context) error {
	if err := checkNewFile(h.o.Target); err != nil {
		return err // before the banner: nothing runs
	}
	h.logf("leasehold chaos: %s", h.o.describe())
	if h.o.Failover != "" {
		if err := h.startPair(ctx); err != nil {
			return err
		}
	}
	if h.o.netNamespaces() {
		if err := h.startNetHosts(ctx); err != nil {
			return err
		}
	}
	o := h.o
	ns, err := newNamespace(ctx, o.Target, h.run)
	if err != nil {
		return err
	}
	h.ns = ns
	if h.db, err = cli.Open(ctx, ns.target, cli.OpenOptions{Create: true}); err != nil {
		return err
	}
	h.logf("database %s", ns.describe())
	if _, err := h.db.Driver.Migrate(ctx); err != nil {
		return fmt.Errorf("chaos: migrate: %w", err)
	}
	sqlDB, err := h.db.SQL()
	if err != nil {
		return err
	}
	ledger, err := payments.NewUnkeyedLedger(sqlDB, payments.Dialect(ns.target.Dialect))
	if err != nil {
		return err
	}
	if err := ledger.Migrate(ctx); err != nil {
		return err
	}
	if h.pair != nil {
		if err := h.startCommitLog(ctx, sqlDB); err != nil {
			return err
		}
	}
	h.client, err = leasehold.NewClient(leasehold.Config{
		Driver: h.db.Driver, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	if err := h.enqueue(ctx); err != nil {
		return err
	}
	h.provider, err = payments.StartProvider(payments.ProviderConfig{
		Addr:       h.providerAddr(),
		MinLatency: o.Latency / 2, MaxLatency: o.Latency * 3 / 2,
		Stall: h.trap.Stall, StallFor: o.StallFor, Seed: o.Seed,
	})
	if err != nil {
		return err
	}
	if o.NetFaultEvery > 0 {
		if err := h.startProxy(ctx); err != nil {
			return err
		}
	}
	for n := 1; n <= o.Workers; n++ {
		s := &slot{n: n}
		if err := h.spawn(s); err != nil {
			return err
		}
		h.slots = append(h.slots, s)
	}
	h.logf("started %d workers (%s); provider %s", o.Workers, h.procNames(), h.provider.URL())
	if h.hosts != nil {
		return h.checkSessions(ctx, "start")
	}
	return nil
}

// providerAddr is where the provider listens: on the bridge in namespace
// mode, so that the workers of the worker host reach it, else on loopback.
func (h *harness) providerAddr() string {
	if h.hosts != nil {
		return h.hosts.net.Gateway().String() + ":0"
	}
	return "127.0.0.1:0"
}

// enqueue inserts the payment jobs in bulk.
func (h *harness) enqueue(ctx context.Context) error {
	const chunk = 5000
	for from := 0; from < h.o.Jobs; from += chunk {
		n := min(chunk, h.o.Jobs-from)
		jobs := make([]leasehold.InsertManyParams, n)
		for i := range jobs {
			id := fmt.Sprintf("chaos-%s-%07d", h.run, from+i+1)
			queue := Queue
			if (from+i)%reconcileEvery == reconcileEvery-1 {
				queue = ReconcileQueue
			}
			jobs[i] = leasehold.InsertManyParams{
				Args: payments.ChargeArgs{PaymentID: id, AmountCents: int64(100 + (from+i)%9900), Currency: "EUR"},
				Opts: &leasehold.InsertOpts{Queue: queue, MaxAttempts: 1000},
			}
		}
		if _, err := h.client.InsertBulk(ctx, jobs); err != nil {
			return fmt.Errorf("chaos: enqueue: %w", err)
		}
	}
	h.logf("enqueued %d payment jobs in queues %s and %s (reconciled when a lease expires)", h.o.Jobs, Queue, ReconcileQueue)
	return nil
}

// stopWorkers stops every worker gracefully (SIGTERM), in parallel, and
// kills those that do not exit in time.
func (h *harness) stopWorkers() {
	h.fleet.StopAll(h.o.StallFor + h.o.TTL + 20*time.Second)
}

// teardown stops whatever still runs and closes the database.
func (h *harness) teardown() {
	h.fleet.Close()
	if h.net != nil {
		_ = h.net.proxy.Close()
	}
	if h.provider != nil {
		_ = h.provider.Close()
	}
	if h.db != nil {
		_ = h.db.Close()
	}
	if h.ns != nil {
		h.ns.close()
	}
	if h.pair != nil {
		h.pair.close(h.ns != nil && h.ns.keep)
	}
	if h.hosts != nil {
		if err := h.hosts.close(h.ns != nil && h.ns.keep); err != nil {
			h.logf("chaos: network teardown: %v", err)
		}
	}
}
