package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/netfault"
	"github.com/leasehold/leasehold/internal/netns"
	"github.com/leasehold/leasehold/internal/pgctl"
)

// Where the proxy of the network faults runs (Options.NetMode).
const (
	NetModeAuto       = "auto"
	NetModeNamespaces = "netns"
	NetModeLoopback   = "loopback"
	// DefaultNetPort is the port of a namespace-mode run's server.
	DefaultNetPort = 5446
	// netMaxConnections is the server's max_connections: each worker opens
	// a pool and a heartbeat pool, and a killed worker's sessions linger
	// until the server notices.
	netMaxConnections = 300
)

// chaosNetwork names the network of a namespace-mode run: host 1 is the
// proxy's, host 2 the proxied workers'. One such run at a time per
// machine: a new one removes what an earlier one left (netns.Create).
var chaosNetwork = netns.Config{Prefix: "leasehold-c", Bridge: "lh-chaos", Hosts: 2,
	Subnet: netip.MustParsePrefix("10.213.1.0/24")}

// netServerDir is where a namespace-mode run keeps its server. It is fixed
// so that a run can stop and remove what a crashed one left.
func netServerDir() string { return filepath.Join(os.TempDir(), "leasehold-chaos-netns") }

func (o Options) netNamespaces() bool { return o.NetFaultEvery > 0 && o.NetMode == NetModeNamespaces }

func netModeDescription(mode string) string {
	if mode == NetModeNamespaces {
		return "in a network namespace"
	}
	return "on loopback"
}

// resolveNetMode turns NetModeAuto into the mode this machine can run.
func resolveNetMode(ctx context.Context, o Options) (string, error) {
	if o.NetFaultEvery <= 0 || (o.NetMode != NetModeAuto && o.NetMode != NetModeNamespaces) {
		return o.NetMode, nil // validate judges the others
	}
	err := netns.Available(ctx)
	if err == nil {
		if _, err = pgctl.Find("initdb"); err == nil {
			_, err = pgctl.Find("pg_ctl")
		}
	}
	switch {
	case err == nil:
		return NetModeNamespaces, nil
	case o.NetMode == NetModeNamespaces:
		return "", fmt.Errorf("chaos: --net-mode %s: %w", NetModeNamespaces, err)
	}
	return NetModeLoopback, nil
}

// netHosts is the network of a namespace-mode run: the proxy's namespace,
// the proxied workers' namespace, and the server on the bridge.
type netHosts struct {
	net        *netns.Network
	proxy      netns.Host
	workers    netns.Host
	srv        *pgctl.Server
	dir        string
	serverAddr string // the server's address on the bridge (host:port)
}

// startNetHosts builds the network and starts the run's server on the
// bridge, which replaces Target: the orchestrator and the direct workers
// reach it from the root namespace, the proxy from its own; the proxied
// workers' namespace is refused by pg_hba.conf, so that they reach it only
// through the proxy.
func (h *harness) startNetHosts(ctx context.Context) error {
	if !h.o.Target.Default {
		h.logf("--db %s is not used: the proxy in its namespace needs a server on the bridge, and the run starts its own", h.o.Target)
	}
	n, err := netns.Create(ctx, chaosNetwork)
	if err != nil {
		return err
	}
	hs := n.Hosts()
	nh := &netHosts{net: n, proxy: hs[0], workers: hs[1], dir: netServerDir()}
	h.hosts = nh
	if err := removeServerDir(ctx, nh.dir); err != nil {
		return err
	}
	if err := os.Mkdir(nh.dir, 0o755); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	gw := n.Gateway().String()
	nh.srv, err = pgctl.StartServer(ctx, pgctl.ServerOptions{
		Dir: filepath.Join(nh.dir, "server"), Port: h.o.NetPort, ListenAddresses: []string{gw},
		HBA: []string{
			"host all all " + netip.PrefixFrom(nh.workers.Addr, 32).String() + " reject",
			"host all all " + n.Subnet().String() + " trust",
		},
		Settings: []string{"max_connections = " + strconv.Itoa(netMaxConnections)},
	})
	if err != nil {
		return err
	}
	nh.serverAddr = gw + ":" + strconv.Itoa(h.o.NetPort)
	h.o.Target = cli.Target{Dialect: cli.Postgres, URL: nh.srv.URL(gw)}
	if h.o.PGRestarts > 0 && h.o.PGData == "" {
		h.o.PGData, h.o.PGLog = nh.srv.DataDir, nh.srv.LogFile
	}
	h.logf("network %s on bridge %s: proxy host %s (%s), worker host %s (%s); PostgreSQL at %s (data %s), which refuses the worker host",
		n.Subnet(), chaosNetwork.Bridge, nh.proxy.Name, nh.proxy.Addr, nh.workers.Name, nh.workers.Addr, nh.serverAddr, nh.srv.DataDir)
	return nil
}

// removeServerDir stops the server a crashed run left in dir, if any, and
// removes dir.
func removeServerDir(ctx context.Context, dir string) error {
	if pgCtl, err := pgctl.Find("pg_ctl"); err == nil {
		_ = pgctl.StopDir(ctx, pgCtl, filepath.Join(dir, "server", "data"))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("chaos: remove %s: %w", dir, err)
	}
	return nil
}

// startProxyProcess starts the proxy as `leasehold chaos proxy` inside the
// proxy host, forwarding to the server on the bridge.
func (h *harness) startProxyProcess(ctx context.Context) (netfault.Switch, string, error) {
	nh := h.hosts
	cmd := nh.proxy.Command(ctx, h.o.Executable, "chaos", "proxy",
		"--listen", nh.proxy.Addr.String()+":0", "--upstream", nh.serverAddr)
	cmd.Stderr = logWriter{h, "proxy: "}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := netfault.Start(sctx, cmd)
	if err != nil {
		return nil, "", err
	}
	h.logf("TCP proxy: pid %d in %s, listening on %s, forwarding to %s", cmd.Process.Pid, nh.proxy.Name, r.Addr(), nh.serverAddr)
	return r, r.Addr(), nil
}

// close stops the server and removes the network; the server's directory
// stays when the run's schema is kept.
func (nh *netHosts) close(keep bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	if nh.srv != nil {
		errs = append(errs, nh.srv.Stop(ctx))
	}
	errs = append(errs, nh.net.Close(ctx))
	if !keep {
		errs = append(errs, os.RemoveAll(nh.dir))
	}
	return errors.Join(errs...)
}

// logWriter prints what a child process writes as schedule lines.
type logWriter struct {
	h      *harness
	prefix string
}

func (w logWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.h.logf("%s%s", w.prefix, line)
	}
	return len(b), nil
}
