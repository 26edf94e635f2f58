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
// values are all 1, with their ids for the index scan.
func leaseSet(n int, lease func(i int) driver.LeaseRef) (ids []int64, set []byte) {
	ids = make([]int64, n)
	set = make([]byte, 0, 2+n*16)
	set = append(set, '{')
	for i := range n {
		l := lease(i)
		ids[i] = l.ID
		if i > 0 {
			set = append(set, ',')
		}
		set = appendLeaseKey(set, l.ID, l.Attempt)
		set = append(set, ":1"...)
	}
	return ids, append(set, '}')
}

// finishInputs encodes the transitions of ps as an object keyed by lease
// whose values are the arrays applyHead reads, with their ids for the
// index scan.
func finishInputs(ps []*driver.FinishParams) (ids []int64, in []byte, err error) {
	ids = make([]int64, len(ps))
	in = append(make([]byte, 0, 96*len(ps)), '{')
	for i, p := range ps {
		ids[i] = p.ID
		t := p.Transition
		v, err := json.Marshal([]any{p.Owner, string(t.State), flag(t.KeepRunAt), micros(t.Delay),
			flag(t.FreeAttempt), flag(t.KeepLastError), t.LastError, flag(t.Finished),
			string(t.Outcome), t.AttemptError})
		if err != nil {
			return nil, nil, err
		}
		if i > 0 {
			in = append(in, ',')
		}
		in = append(appendLeaseKey(in, p.ID, p.Attempt), ':')
		in = append(in, v...)
	}
	return ids, append(in, '}'), nil
}
