package netns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Cleanup removes whatever a network of cfg's names left behind, whatever
// its number of hosts, but only what Create made (marked with Mark, or
// claimed; see claimDir): the processes still running in its namespaces
// (killed by pid, as `ip netns pids` lists them, since they would keep the
// namespaces and their links alive), the namespaces (Prefix followed by a
// number), the root-side veth ends (Bridge-number) and the bridge. Links
// and namespaces of those names that something else made are left alone,
// and so are their processes. It does nothing when nothing is left, so it
// is safe to call at any time.
func Cleanup(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	out, err := run(ctx, "netns", "list")
	if err != nil {
		return err
	}
	nsNames := numbered(namespaceNames(out), cfg.Prefix)
	var errs []error
	for _, ns := range nsNames {
		errs = append(errs, removeNamespace(ctx, ns))
	}
	ls, err := links(ctx, "", "")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	var linkNames []string
	for _, l := range ls {
		if cfg.isLink(l.Name) {
			linkNames = append(linkNames, l.Name)
		}
	}
	// The veth ends first, then the bridge they are on.
	for _, bridge := range []bool{false, true} {
		for _, l := range ls {
			if cfg.isLink(l.Name) && (l.Name == cfg.Bridge) == bridge && l.ours() {
				errs = append(errs, removeLink(ctx, l.Name))
			}
		}
	}
	errs = append(errs, dropClaims(kindNetns, cfg.Prefix, nsNames), dropClaims(kindLink, cfg.Bridge+"-", linkNames))
	if !slices.Contains(linkNames, cfg.Bridge) {
		errs = append(errs, unclaim(kindLink, cfg.Bridge))
	}
	return errors.Join(errs...)
}

// removeNamespace kills the processes in namespace ns and deletes it, if
// Create made it.
func removeNamespace(ctx context.Context, ns string) error {
	mine, err := ownNamespace(ctx, ns)
	if err != nil || !mine {
		return err
	}
	killed := killIn(ctx, ns)
	if _, err := run(ctx, "netns", "delete", ns); err != nil {
		return errors.Join(killed, err)
	}
	return errors.Join(killed, unclaim(kindNetns, ns))
}

// isLink reports whether name is one of the network's links: the bridge
// or a root-side veth end (Bridge-number), whatever the number of hosts.
func (c Config) isLink(name string) bool {
	return name == c.Bridge || len(numbered([]string{name}, c.Bridge+"-")) == 1
}

// removeLink deletes the link name, which Create made, and its claim.
func removeLink(ctx context.Context, name string) error {
	if err := deleteLink(ctx, name); err != nil {
		return err
	}
	return unclaim(kindLink, name)
}

// dropClaims removes the claims of kind on prefix-number names that do not
// exist (present lists those that did): a run killed between a claim and
// the ip command it covered leaves them.
func dropClaims(kind, prefix string, present []string) error {
	names, err := claims(kind)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range numbered(names, prefix) {
		if !slices.Contains(present, n) {
			errs = append(errs, unclaim(kind, n))
		}
	}
	return errors.Join(errs...)
}

// killIn SIGKILLs the processes running in namespace ns.
func killIn(ctx context.Context, ns string) error {
	out, err := run(ctx, "netns", "pids", ns)
	if err != nil {
		return nil // the namespace is going anyway
	}
	var errs []error
	for _, f := range strings.Fields(out) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 1 {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("netns: kill pid %d left in %s: %w", pid, ns, err))
		}
	}
	return errors.Join(errs...)
}

// deleteLink deletes a link; one already gone (its peer's namespace went
// with it) is not an error. ip says so in two ways: "Cannot find device"
// when the name is gone before it asks, "No such device" when the kernel
// removed the link between the lookup and the delete (a namespace's
// teardown, which `ip netns delete` starts, removes its veth pairs
// asynchronously, so Cleanup can list a root-side end that then goes).
func deleteLink(ctx context.Context, name string) error {
	_, err := run(ctx, "link", "delete", name)
	if err != nil && (strings.Contains(err.Error(), "Cannot find device") || strings.Contains(err.Error(), "No such device")) {
		return nil
	}
	return err
}

// namespaceNames parses `ip netns list`: one namespace a line, its name
// first ("leasehold-h1 (id: 3)").
func namespaceNames(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

// numbered returns the names that are prefix followed by a number.
func numbered(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, prefix)
		if _, err := strconv.Atoi(rest); ok && err == nil {
			out = append(out, n)
		}
	}
	return out
}
