package netns_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/netns"
)

// testConfig names a network of the tests' own, apart from the default
// one a `leasehold hosts` run may be using.
var testConfig = netns.Config{Prefix: "lhtest-ns", Bridge: "lhtest-br", Hosts: 2, Subnet: netip.MustParsePrefix("10.213.251.0/24")}

func available(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	if err := netns.Available(ctx); err != nil {
		if !errors.Is(err, netns.ErrUnavailable) {
			t.Fatalf("Available: %v does not wrap ErrUnavailable", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return ctx
}

// TestHostsReachTheGateway builds the network and connects from each
// host to a listener on the gateway: the listener must see the host's own
// address.
func TestHostsReachTheGateway(t *testing.T) {
	ctx := available(t)
	n, err := netns.Create(ctx, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if got := n.Gateway().String(); got != "10.213.251.1" {
		t.Fatalf("gateway %s, want 10.213.251.1", got)
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(n.Gateway(), 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hosts := n.Hosts()
	if len(hosts) != 2 || hosts[0].Name != "lhtest-ns1" || hosts[1].Addr.String() != "10.213.251.12" {
		t.Fatalf("hosts %v", hosts)
	}
	for _, h := range hosts {
		// bash opens the TCP connection itself (/dev/tcp), from inside h.
		cmd := h.Command(ctx, "bash", "-c", "echo "+h.Name+" >/dev/tcp/"+n.Gateway().String()+"/"+port(ln))
		done := make(chan error, 1)
		go func() { done <- runQuiet(cmd) }()
		conn, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		from := conn.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
		_ = conn.Close()
		if from != h.Addr {
			t.Errorf("connection from %s came from %s, want %s", h.Name, from, h.Addr)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: %v", h.Name, err)
		}
	}
}

// TestCleanupAfterCrash leaves a network behind (no Close, a process
// still running in one namespace), then builds it again with another host
// count, and checks that Cleanup leaves nothing of either.
func TestCleanupAfterCrash(t *testing.T) {
	ctx := available(t)
	if _, err := netns.Create(ctx, testConfig); err != nil {
		t.Fatal(err)
	}
	leftover := netns.Host{Name: "lhtest-ns1"}.Command(ctx, "sleep", "300")
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = leftover.Process.Kill(); _ = leftover.Wait() }()
	cfg := testConfig
	cfg.Hosts = 3
	n, err := netns.Create(ctx, cfg)
	if err != nil {
		t.Fatalf("Create over leftovers: %v", err)
	}
	if len(n.Hosts()) != 3 {
		t.Fatalf("hosts %v", n.Hosts())
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if left := remains(t, ctx); left != "" {
		t.Fatalf("left behind: %s", left)
	}
}

// remains lists the test network's namespaces and links still present.
func remains(t *testing.T, ctx context.Context) string {
	t.Helper()
	var left []string
	for _, args := range [][]string{{"netns", "list"}, {"-o", "link", "show"}} {
		out, err := exec.CommandContext(ctx, "ip", args...).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "lhtest-") {
				left = append(left, strings.TrimSpace(line))
			}
		}
	}
	return strings.Join(left, "; ")
}

func TestCreateRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	for _, c := range []netns.Config{
		{Hosts: -1},
		{Hosts: 1000},
		{Subnet: netip.MustParsePrefix("10.0.0.0/16")},
		{Bridge: "a-very-long-bridge"},
	} {
		if _, err := netns.Create(ctx, c); err == nil || errors.Is(err, netns.ErrUnavailable) {
			t.Errorf("Create(%+v): %v, want a configuration error", c, err)
		}
	}
}

func port(ln net.Listener) string {
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p
}

func runQuiet(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.New(err.Error() + ": " + string(out))
	}
	return nil
}
