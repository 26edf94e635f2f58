package pgdriver

import (
	"encoding/json"
	"strconv"

	"github.com/leasehold/leasehold/driver"
)

// The statements that write for a batch of leases (Heartbeat, Finish) find
// each job by primary key with "id = ANY($ids)" and check the rest of its
// fence against a JSON object keyed by lease:
//
//	{"<id>:<attempt>": …, …}
//
// looked up with leaseKeySQL: a key exists only for the exact attempt the
// worker holds, and its value carries that lease's parameters, if any.
//
// An earlier form joined the jobs to unnest($ids, $attempts). Right after
// an ANALYZE of a freshly filled queue (every lease_owner NULL), the
// planner estimated that one job would match and chose a nested loop that
// rescanned the whole unnest for every job: 1000 × 1000 comparisons, a
// second per finish, until autovacuum analyzed the table again. Without a
// join there is no join order to get wrong: the plan is an index scan of
// the primary key whatever the statistics say, and each lookup in the
// object is a binary search.
const leaseKeySQL = `(j.id::text || ':' || j.attempt::text)`

// leaseKey returns a lease's key in the object.
func appendLeaseKey(b []byte, id int64, attempt int) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, id, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(attempt), 10)
	return append(b, '"')
}

// leaseSet encodes leases as an object whose keys are the leases and whose
// values are all 1, with their ids for the index scan. The object is a
// string, not []byte: pgx sends a string as text in every query exec mode,
// but []byte as bytea in the modes that describe no statement
// (simple_protocol, exec: behind a transaction-pooling proxy), which
// ::jsonb refuses.
func leaseSet(n int, lease func(i int) driver.LeaseRef) (ids []int64, set string) {
	ids = make([]int64, n)
	b := make([]byte, 0, 2+n*16)
	b = append(b, '{')
	for i := range n {
		l := lease(i)
		ids[i] = l.ID
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLeaseKey(b, l.ID, l.Attempt)
		b = append(b, ":1"...)
	}
	return ids, string(append(b, '}'))
}

// finishInputs encodes the transitions of ps as an object keyed by lease
// whose values are the arrays applyHead reads, with their ids for the
// index scan; a string, as leaseSet's.
func finishInputs(ps []*driver.FinishParams) (ids []int64, in string, err error) {
	ids = make([]int64, len(ps))
	b := append(make([]byte, 0, 96*len(ps)), '{')
	for i, p := range ps {
		ids[i] = p.ID
		t := p.Transition
		fields := []any{p.Owner, string(t.State), flag(t.KeepRunAt), micros(t.Delay),
			flag(t.FreeAttempt), flag(t.KeepLastError), t.LastError, flag(t.Finished),
			string(t.Outcome), t.AttemptError}
		if c := t.OutcomeWhenCancelled(); c != t.Outcome {
			fields = append(fields, string(c)) // see applyEnded
		}
		v, err := json.Marshal(fields)
		if err != nil {
			return nil, "", err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendLeaseKey(b, p.ID, p.Attempt), ':')
		b = append(b, v...)
	}
	return ids, string(append(b, '}')), nil
}
