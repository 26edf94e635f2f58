package pgdriver

import (
	"context"
	"fmt"
	"strings"

	"github.com/leasehold/leasehold/driver"
)

// minGroup is the fewest leases of one owner and one transition for which
// a batch of several transitions is written with finishSplitSQL rather
// than finishSQL: any group saves its leases' per-lease input, in the same
// one statement, and a batch of distinct transitions has none.
const minGroup = 2

// restParams renumbers the parameters of applyUpdate and applyReturning,
// $1 (ids) and $2 (inputs), to follow finishUniformSQL's thirteen.
var restParams = strings.NewReplacer("$1::", "$14::", "$2::", "$15::")

// finishSplitSQL is finishSQL for a batch of several transitions with a
// large group of one owner and one transition: the group written as
// finishUniformSQL writes a uniform batch ($1 to $13), the rest lease by
// lease as finishSQL does ($14 ids, $15 inputs), and the history rows of
// both, in one statement. finishSQL reads ten fields of every lease's
// input: in batches of 1,000 with one lease in a hundred retried, a lease
// cost 17.8-20.4 µs that way against 11.2-12.4 µs in a batch of
// completions alone, and 11.9-14.5 µs with the completions written as a
// group (BenchmarkFinish). A batch of completions with a retried job among
// them is the common batch when some payments are declined.
var finishSplitSQL = `WITH grp AS (
	` + uniformUpdate + `
), rest AS (
	` + restParams.Replace(applyUpdate+applyReturning) + `
), ended AS (
	` + uniformEnded + `
	FROM grp
	UNION ALL
	` + applyEnded + `
	FROM rest
)` + endAttemptsSQL + `
SELECT id, cancelled FROM grp UNION ALL SELECT id, ` + applyCancelled + ` FROM rest ORDER BY id`

// largestUniform returns the largest group of leases of ps with one owner
// and one transition (driver.UniformGroups; the first of equal ones), and
// the other leases.
func largestUniform(ps []*driver.FinishParams) (group, rest []*driver.FinishParams) {
	groups := driver.UniformGroups(ps)
	best := 0
	for i, g := range groups {
		if len(g) > len(groups[best]) {
			best = i
		}
	}
	for i, g := range groups {
		if i != best {
			rest = append(rest, g...)
		}
	}
	return groups[best], rest
}

// finishSplit runs finishSplitSQL for group, one owner and one
// transition, and rest.
func (d *Driver) finishSplit(ctx context.Context, q querier, group, rest []*driver.FinishParams) ([]driver.FinishResult, error) {
	ids, leases := leaseSet(len(group), func(i int) driver.LeaseRef {
		return driver.LeaseRef{ID: group[i].ID, Attempt: group[i].Attempt}
	})
	restIDs, in, err := finishInputs(rest)
	if err != nil {
		return nil, err
	}
	args := append([]any{ids, leases, group[0].Owner}, uniformArgs(group[0].Transition)...)
	done, err := collect(ctx, q, newFinishScan().scan, finishSplitSQL, append(args, restIDs, in)...)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: finish: %w", err)
	}
	return done, nil
}
