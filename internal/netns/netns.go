// Package netns builds a small private network of Linux network namespaces
// on one machine, so that processes started in them look like separate
// hosts: each namespace has its own address, and reaches the root
// namespace, where a server listens on the bridge's address, over a veth
// link. It drives the ip(8) program (iproute2) and needs root.
//
// The API is four steps: Create builds the network (removing leftovers of
// an earlier run first), Network.Hosts gives each namespace's name and
// address, Host.Command runs a program inside one (`ip netns exec`), and
// Network.Close tears everything down. Cleanup removes what a crashed run
// left behind. Create marks what it makes (see Mark), and Cleanup removes
// only that: a bridge or namespace of the same name made by something
// else is never touched, and Create refuses its name (ErrForeign).
package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// ErrUnavailable reports a machine where the network cannot be built: not
// root, or no ip(8) that can list namespaces. Callers skip on it.
var ErrUnavailable = errors.New("netns: network namespaces unavailable")

// Defaults of Config.
const (
	DefaultPrefix = "leasehold-h"
	DefaultBridge = "lh-hosts"
	DefaultHosts  = 3
)

// DefaultSubnet is the private /24 of the network: the bridge (the root
// namespace's side) takes .1, host i takes .10+i.
var DefaultSubnet = netip.MustParsePrefix("10.213.0.0/24")

// maxIfName is the longest interface name Linux accepts (IFNAMSIZ - 1).
const maxIfName = 15

// maxHosts bounds Config.Hosts: host addresses run from .11 to .254.
const maxHosts = 240

// Config names the network. Two networks on one machine need different
// prefixes, bridges and subnets; zero fields take the defaults.
type Config struct {
	// Prefix names the namespaces: Prefix1, Prefix2, ...
	Prefix string
	// Bridge names the bridge in the root namespace; the root-side end of
	// host i's veth pair is Bridge-i.
	Bridge string
	// Hosts is the number of namespaces.
	Hosts int
	// Subnet is the network's /24.
	Subnet netip.Prefix
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Bridge == "" {
		c.Bridge = DefaultBridge
	}
	if c.Hosts == 0 {
		c.Hosts = DefaultHosts
	}
	if !c.Subnet.IsValid() {
		c.Subnet = DefaultSubnet
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Hosts < 1 || c.Hosts > maxHosts:
		return fmt.Errorf("netns: %d hosts: want 1 to %d", c.Hosts, maxHosts)
	case !c.Subnet.Addr().Is4() || c.Subnet.Bits() != 24:
		return fmt.Errorf("netns: subnet %s: want an IPv4 /24", c.Subnet)
	case len(c.vethName(c.Hosts)) > maxIfName:
		return fmt.Errorf("netns: bridge name %q is too long for its veth names (%s)", c.Bridge, c.vethName(c.Hosts))
	case strings.ContainsAny(c.Prefix+c.Bridge, " /\t\n"):
		return fmt.Errorf("netns: names must not hold spaces or slashes: %q, %q", c.Prefix, c.Bridge)
	}
	return nil
}

func (c Config) nsName(i int) string   { return fmt.Sprintf("%s%d", c.Prefix, i) }
func (c Config) vethName(i int) string { return fmt.Sprintf("%s-%d", c.Bridge, i) }

// addr returns the address .n of the subnet.
func (c Config) addr(n int) netip.Addr {
	b := c.Subnet.Masked().Addr().As4()
	b[3] = byte(n)
	return netip.AddrFrom4(b)
}

// Host is one namespace.
type Host struct {
	// Name is the namespace's name (ip netns).
	Name string
	// Addr is its address on the network.
	Addr netip.Addr
}

// Network is a built network. Close tears it down.
type Network struct {
	cfg   Config
	hosts []Host
}

// Available reports, as an error wrapping ErrUnavailable with the reason,
// whether this process can build a network.
func Available(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root (running as uid %d)", ErrUnavailable, os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: no ip program (install iproute2): %v", ErrUnavailable, err)
	}
	if _, err := run(ctx, "netns", "list"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// Create builds the network of cfg: it first removes what an earlier run
// with the same names left behind (Cleanup), then adds the bridge with the
// subnet's .1, and for each host a namespace with its loopback up and a
// veth pair, one end in the namespace (eth0, address .10+i) and the other
// on the bridge, marking each (see Mark). A link or namespace of a name it
// needs that it did not make is left alone: Create returns an error
// wrapping ErrForeign. On failure it removes what it built.
func Create(ctx context.Context, cfg Config) (*Network, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := Available(ctx); err != nil {
		return nil, err
	}
	if err := Cleanup(ctx, cfg); err != nil {
		return nil, err
	}
	if err := checkFree(ctx, cfg); err != nil {
		return nil, err
	}
	n := &Network{cfg: cfg}
	if err := n.build(ctx); err != nil {
		_ = Cleanup(context.WithoutCancel(ctx), cfg)
		return nil, err
	}
	return n, nil
}

// checkFree returns an error wrapping ErrForeign when a name the network
// needs is taken. Run after Cleanup, whatever is left is not ours.
func checkFree(ctx context.Context, c Config) error {
	out, err := run(ctx, "netns", "list")
	if err != nil {
		return err
	}
	ls, err := links(ctx, "", "")
	if err != nil {
		return err
	}
	namespaces := namespaceNames(out)
	taken := func(name string) bool {
		return slices.ContainsFunc(ls, func(l link) bool { return l.Name == name })
	}
	if taken(c.Bridge) {
		return foreign(kindLink, c.Bridge)
	}
	for i := 1; i <= c.Hosts; i++ {
		if slices.Contains(namespaces, c.nsName(i)) {
			return foreign(kindNetns, c.nsName(i))
		}
		if taken(c.vethName(i)) {
			return foreign(kindLink, c.vethName(i))
		}
	}
	return nil
}

// build adds the bridge and the hosts, each link and namespace marked as
// it is made (createMarked).
func (n *Network) build(ctx context.Context) error {
	c := n.cfg
	gw := netip.PrefixFrom(c.addr(1), 24).String()
	if err := createMarked(ctx, kindLink, c.Bridge,
		[]string{"link", "add", c.Bridge, "type", "bridge"},
		[]string{"link", "set", c.Bridge, "alias", Mark},
	); err != nil {
		return err
	}
	if err := runAll(ctx,
		[]string{"addr", "add", gw, "dev", c.Bridge},
		[]string{"link", "set", c.Bridge, "up"},
	); err != nil {
		return err
	}
	for i := 1; i <= c.Hosts; i++ {
		h := Host{Name: c.nsName(i), Addr: c.addr(10 + i)}
		if err := n.addHost(ctx, h, c.vethName(i)); err != nil {
			return err
		}
		n.hosts = append(n.hosts, h)
	}
	return nil
}

// addHost adds namespace h, its loopback up, and the veth pair veth-eth0
// from the bridge to it.
func (n *Network) addHost(ctx context.Context, h Host, veth string) error {
	if err := createMarked(ctx, kindNetns, h.Name,
		[]string{"netns", "add", h.Name},
		[]string{"-n", h.Name, "link", "set", "lo", "alias", Mark, "up"},
	); err != nil {
		return err
	}
	if err := createMarked(ctx, kindLink, veth,
		[]string{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", h.Name},
		[]string{"link", "set", veth, "alias", Mark},
	); err != nil {
		return err
	}
	return runAll(ctx,
		[]string{"link", "set", veth, "master", n.cfg.Bridge, "up"},
		[]string{"-n", h.Name, "addr", "add", netip.PrefixFrom(h.Addr, 24).String(), "dev", "eth0"},
		[]string{"-n", h.Name, "link", "set", "eth0", "up"},
	)
}

// Hosts returns the namespaces, host 1 first.
func (n *Network) Hosts() []Host { return append([]Host(nil), n.hosts...) }

// Gateway returns the root namespace's address on the network (the
// bridge's): where a server every host reaches listens.
func (n *Network) Gateway() netip.Addr { return n.cfg.addr(1) }

// Subnet returns the network's /24, for a server's access rules.
func (n *Network) Subnet() netip.Prefix { return n.cfg.Subnet.Masked() }

// Close removes the namespaces (and with them their veth pairs) and the
// bridge. Calling it again does nothing more.
func (n *Network) Close(ctx context.Context) error { return Cleanup(ctx, n.cfg) }

// Argv returns the command line that runs program with args inside h:
// `ip netns exec NAME program args...`. ip execs the program, so the
// process started is the program itself (its pid, its signals), and it
// inherits the environment.
func (h Host) Argv(program string, args ...string) []string {
	return append([]string{"ip", "netns", "exec", h.Name, program}, args...)
}

// Command prepares program with args to run inside h (see Argv).
func (h Host) Command(ctx context.Context, program string, args ...string) *exec.Cmd {
	argv := h.Argv(program, args...)
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// run runs ip with args and returns its output, or an error carrying it.
func run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ip", args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := runOrphanless(cmd); err != nil {
		return "", fmt.Errorf("netns: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// runAll runs ip once per argument list, stopping at the first failure.
func runAll(ctx context.Context, cmds ...[]string) error {
	for _, args := range cmds {
		if _, err := run(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}
