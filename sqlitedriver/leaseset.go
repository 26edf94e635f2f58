package sqlitedriver

import (
	"cmp"
	"slices"
	"strconv"
)

// A lease set is the parameter that names the leases a statement writes
// or reads by their fences: a JSON object keyed by job id whose values
// are attempts, {"12":1,"13":2}. json_each gives each member as a row
// whose key and value are read as they are. The array of [id, attempt]
// pairs it replaces cost a parse of each pair for every field read from
// it (value->>0, value->>1): a fifth of a batch of completions' time
// under the write lock (docs/benchmarks.md, "Lease sets keyed by job
// id"). An id may appear twice, for a stale attempt and the current one:
// json_each returns every member, duplicates included, in order.
//
// leaseRowsFrom and leaseRowsTo enclose the parameter's place in the
// FROM item that gives one row r per lease: rid the job id (text, which
// a comparison with an integer column converts) and ratt the attempt.
const (
	leaseRowsFrom = `(SELECT key AS rid, value AS ratt FROM json_each(`
	leaseRowsTo   = `)) AS r`
)

// appendLeaseSet appends the lease set of leases, each {id, attempt}, in
// the order given, to buf.
func appendLeaseSet(buf []byte, leases [][2]int64) []byte {
	buf = append(buf, '{')
	for i, l := range leases {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(append(buf, '"'), l[0], 10)
		buf = strconv.AppendInt(append(buf, '"', ':'), l[1], 10)
	}
	return append(buf, '}')
}

// sortedLeaseSet returns the lease set of leases in (id, attempt) order,
// and reports whether it names each lease once. Handlers finish in any
// order, and SQLite writes a batch whose rows come in key order for less:
// each job row, its index entries and its history row are then next to
// the previous one's, which the B-tree reaches without a descent from the
// root (a tenth of the finish, measured). leases is sorted in place.
func sortedLeaseSet(leases [][2]int64) (set string, distinct bool) {
	slices.SortFunc(leases, func(x, y [2]int64) int {
		return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1]))
	})
	distinct = true
	for i := 1; i < len(leases); i++ {
		distinct = distinct && leases[i] != leases[i-1]
	}
	return string(appendLeaseSet(make([]byte, 0, 2+24*len(leases)), leases)), distinct
}
