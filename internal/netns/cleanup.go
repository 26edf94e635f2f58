package netns

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// Cleanup removes whatever a network of cfg's names left behind, whatever
// its number of hosts: the processes still running in its namespaces
// (killed by pid, as `ip netns pids` lists them, since they would keep the
// namespaces and their links alive), the namespaces (Prefix followed by a
// number), the root-side veth ends (Bridge-number) and the bridge. It does
// nothing when nothing is left, so it is safe to call at any time.
func Cleanup(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	names, err := run(ctx, "netns", "list")
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range numbered(namespaceNames(names), cfg.Prefix) {
		errs = append(errs, killIn(ctx, ns))
		if _, err := run(ctx, "netns", "delete", ns); err != nil {
			errs = append(errs, err)
		}
	}
	links, err := run(ctx, "-o", "link", "show")
	if err != nil {
		return err
	}
	linkNames := linkNames(links)
	for _, l := range numbered(linkNames, cfg.Bridge+"-") {
		errs = append(errs, deleteLink(ctx, l))
	}
	for _, l := range linkNames {
		if l == cfg.Bridge {
			errs = append(errs, deleteLink(ctx, l))
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

// linkNames parses `ip -o link show`: "7: name@peer: <FLAGS> ...".
func linkNames(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := strings.TrimSuffix(f[1], ":")
		if i := strings.IndexByte(name, '@'); i >= 0 {
			name = name[:i]
		}
		names = append(names, name)
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
