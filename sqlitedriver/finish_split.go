package sqlitedriver

import (
	"context"
	"database/sql"
	"maps"

	"github.com/leasehold/leasehold/driver"
)

// minGroup is the fewest leases of one owner and one transition that a
// batch of several transitions writes with uniformSQL's statements
// rather than applySQL. applySQL parses ten fields of every lease's
// entry: in batches of 1,000, a lease cost SQLite 22-24 µs that way
// against 11.5-12 µs in a uniform batch, and a batch of completions with
// a retried job among them, the common batch when some payments are
// declined, paid it for every lease. Written as groups of one owner and
// one transition, two statements each, the same batches cost 39-49 µs a
// lease in groups of one, 29-30 in groups of two and 18 in groups of four
// or eight (BenchmarkFinish).
const minGroup = 4

// splitUniform returns the leases of ps, each fence once (its first
// entry, as Finish applies), as the groups of at least minGroup leases
// of one owner and one transition (driver.UniformGroups), and the leases
// of the smaller groups, in the order of ps.
func splitUniform(ps []*driver.FinishParams) (groups [][]*driver.FinishParams, rest []*driver.FinishParams) {
	seen := make(map[fence]bool, len(ps))
	uniq := make([]*driver.FinishParams, 0, len(ps))
	for _, p := range ps {
		if f := (fence{p.ID, p.Attempt, p.Owner}); !seen[f] {
			seen[f] = true
			uniq = append(uniq, p)
		}
	}
	small := map[*driver.FinishParams]bool{}
	for _, g := range driver.UniformGroups(uniq) {
		if len(g) >= minGroup {
			groups = append(groups, g)
			continue
		}
		for _, p := range g {
			small[p] = true
		}
	}
	for _, p := range uniq {
		if small[p] {
			rest = append(rest, p)
		}
	}
	return groups, rest
}

// finishSplit is Finish for a batch of several transitions split by
// splitUniform into groups and rest: each group written as a uniform
// batch (uniformIn), the rest with applySQL, in one transaction.
func (d *Driver) finishSplit(ctx context.Context, t *sql.Tx, ps []*driver.FinishParams, groups [][]*driver.FinishParams, rest []*driver.FinishParams) ([]driver.FinishResult, error) {
	var queries []string
	for _, g := range groups {
		queries = append(queries, uniformQueries(g[0].Transition)...)
	}
	var arr string
	if len(rest) > 0 {
		var err error
		if arr, err = jsonParam(finishEntries(rest)); err != nil {
			return nil, err
		}
		queries = append(queries, endFinishedSQL, finishSQL)
	}
	var matched map[int64]updated
	err := d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		matched = make(map[int64]updated, len(ps))
		for _, g := range groups {
			m, all, err := d.uniformIn(ctx, tx, now, g)
			if err != nil {
				return err
			}
			if all {
				for _, p := range g {
					matched[p.ID] = updated{attempt: p.Attempt}
				}
			}
			maps.Copy(matched, m)
		}
		if len(rest) == 0 {
			return nil
		}
		m, err := d.apply(ctx, tx, finishSQL, endFinishedSQL, now, arr)
		maps.Copy(matched, m)
		return err
	}, queries...)
	if err != nil {
		return nil, err
	}
	return appliedResults(ps, matched), nil
}
