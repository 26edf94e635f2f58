package netns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mark is the alias (ifalias) that Create gives each link it adds: the
// bridge, the root-side veth ends, and the loopback inside each namespace
// it adds (a namespace has no alias of its own; its loopback is made and
// removed with it). Cleanup removes only what carries it, or a claim: a
// bridge, namespace or process of the same name that something else made
// is left alone.
const Mark = "leasehold-netns"

// ErrForeign reports that a link or namespace Create needs already exists
// and was not made by this package: another tool's, or the machine's own.
// Create leaves it alone; the caller chooses other names.
var ErrForeign = errors.New("netns: name taken")

// Kinds of claims: links and namespaces have separate names.
const (
	kindLink  = "link"
	kindNetns = "netns"
)

// claimDir holds the claims: an empty file per name (claimDir/kind/name)
// written just before Create adds that link or namespace and removed once
// it carries Mark. A run killed between the two leaves an unmarked object
// and its claim, so the next Cleanup still knows the object as its own.
// It is under /run, a tmpfs cleared at boot as the links and namespaces
// are, so a claim does not outlive what it names.
var claimDir = "/run/leasehold-netns"

func claimPath(kind, name string) string { return filepath.Join(claimDir, kind, name) }

// claim writes the claim of name.
func claim(kind, name string) error {
	if err := os.MkdirAll(filepath.Join(claimDir, kind), 0o755); err != nil {
		return fmt.Errorf("netns: claim %s %s: %w", kind, name, err)
	}
	if err := os.WriteFile(claimPath(kind, name), nil, 0o644); err != nil {
		return fmt.Errorf("netns: claim %s %s: %w", kind, name, err)
	}
	return nil
}

// unclaim removes the claim of name, if any.
func unclaim(kind, name string) error {
	if err := os.Remove(claimPath(kind, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netns: unclaim %s %s: %w", kind, name, err)
	}
	return nil
}

// claimed reports whether name has a claim.
func claimed(kind, name string) bool {
	_, err := os.Stat(claimPath(kind, name))
	return err == nil
}

// claims lists the names of kind that have a claim.
func claims(kind string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(claimDir, kind))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netns: list claims: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}

// createMarked adds a link or namespace of kind and name with the ip
// command add, then marks it with the ip command mark, under a claim (see
// claimDir). When add fails because the name is taken, nothing of ours
// was added and the claim goes; on any other failure it stays, since the
// object may exist, and Cleanup removes both.
func createMarked(ctx context.Context, kind, name string, add, mark []string) error {
	if err := claim(kind, name); err != nil {
		return err
	}
	if _, err := run(ctx, add...); err != nil {
		if strings.Contains(err.Error(), "File exists") {
			return errors.Join(foreign(kind, name), unclaim(kind, name))
		}
		return err
	}
	if _, err := run(ctx, mark...); err != nil {
		return err
	}
	return unclaim(kind, name)
}

// foreign is the error of a name Create needs that something else holds.
func foreign(kind, name string) error {
	what := "link"
	if kind == kindNetns {
		what = "namespace"
	}
	return fmt.Errorf("%w: %s %s exists and was not made by leasehold hosts: choose another --bridge/--prefix", ErrForeign, what, name)
}

// link is a link of `ip -j link show`.
type link struct {
	Name  string `json:"ifname"`
	Alias string `json:"ifalias"`
}

// links lists the links of namespace ns ("" for the root namespace), or
// only the one named dev when dev is not "".
func links(ctx context.Context, ns, dev string) ([]link, error) {
	args := []string{"-j", "link", "show"}
	if dev != "" {
		args = append(args, "dev", dev)
	}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	out, err := run(ctx, args...)
	if err != nil {
		return nil, err
	}
	var ls []link
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		return nil, fmt.Errorf("netns: ip %s: %w", strings.Join(args, " "), err)
	}
	return ls, nil
}

// ours reports whether the link l of the root namespace is one Create
// added: marked, or claimed by a run killed before it could mark it.
func (l link) ours() bool { return l.Alias == Mark || claimed(kindLink, l.Name) }

// ownNamespace reports whether namespace ns is one Create added: its
// loopback marked, or the namespace claimed.
func ownNamespace(ctx context.Context, ns string) (bool, error) {
	if claimed(kindNetns, ns) {
		return true, nil
	}
	ls, err := links(ctx, ns, "lo")
	if err != nil {
		return false, err
	}
	return len(ls) == 1 && ls[0].Alias == Mark, nil
}
