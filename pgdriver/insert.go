package pgdriver

import (
	"context"
	"fmt"
	"sort"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// notifyChannel is the LISTEN/NOTIFY channel of insert hints; the payload
// is the queue name.
const notifyChannel = "leasehold_insert"

// insertInput unnests the insert arrays built by newInsertArrays. Times use
// statement_timestamp() because the statement may run in a caller's long
// transaction.
const insertInput = `input AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[], $6::text[],
		$7::text[], $8::timestamptz[], $9::bigint[], $10::boolean[], $11::uuid[])
		WITH ORDINALITY AS t(kind, queue, priority, max_attempts, args, metadata,
			unique_key, run_at, run_in, notify, uuid, ord)
)`

// insertRows skips a job whose unique key its kind already has.
const insertRows = `INSERT INTO leasehold_jobs (kind, queue, status, priority, max_attempts,
		args, metadata, unique_key, run_at, created_at, uuid)
	SELECT kind, queue, 'pending', priority, max_attempts, args::jsonb, metadata::jsonb,
		nullif(unique_key, ''),
		coalesce(run_at, statement_timestamp() + run_in * interval '1 microsecond'),
		statement_timestamp(), uuid
	FROM input ORDER BY ord
	ON CONFLICT (kind, unique_key) WHERE unique_key IS NOT NULL DO NOTHING`

// insertSQL inserts and returns the new rows, and sends one notification
// per distinct queue of the jobs with notify set (the one-time filter makes
// the note CTE run exactly once; NOTIFY fires at commit).
const insertSQL = `WITH ` + insertInput + `,
ins AS (` + insertRows + ` RETURNING *),
note AS (
	SELECT count(pg_notify('` + notifyChannel + `', queue)) AS n
	FROM (SELECT DISTINCT queue FROM input WHERE notify) q
)
SELECT ` + jobColumns + ` FROM ins WHERE (SELECT n FROM note) >= 0 ORDER BY id`

// insertQuietSQL is insertSQL without the notifications, for the driver's
// own transactions: the notifier sends them, coalesced, after the commit.
const insertQuietSQL = `WITH ` + insertInput + `,
ins AS (` + insertRows + ` RETURNING *)
SELECT ` + jobColumns + ` FROM ins ORDER BY id`

const insertBulkSQL = `WITH ` + insertInput + ` ` + insertRows

// selectByUniqueKeySQL reads the existing jobs of (kind, unique key)
// pairs.
const selectByUniqueKeySQL = `SELECT ` + jobColumns + ` FROM leasehold_jobs
	WHERE (kind, unique_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`

// Insert inserts jobs in one statement, in tx when it is non-nil (see the
// package documentation for accepted types). Jobs whose UniqueKey exists
// already are returned as duplicates. Results are in the order of params.
// The hints for jobs with Notify are sent at tx's commit, or, without tx,
// by the notifier just after the insert commits.
func (d *Driver) Insert(ctx context.Context, tx any, params []*driver.InsertParams) ([]*leasehold.InsertResult, error) {
	q, err := d.querierFor(tx)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 {
		return nil, nil
	}
	query := insertSQL
	if tx == nil {
		query = insertQuietSQL
	}
	arrays, err := newInsertArrays(params)
	if err != nil {
		return nil, err
	}
	inserted, err := collect(ctx, q, newJobScan(&d.names).scan, query, arrays.params()...)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: insert: %w", err)
	}
	if tx == nil {
		d.notes.request(notifyQueues(params))
	}
	res, missing, err := matchInserted(params, inserted)
	if err != nil || len(missing) == 0 {
		return res, err
	}
	kinds, keys := missing.columns()
	existing, err := collect(ctx, q, newJobScan(&d.names).scan, selectByUniqueKeySQL, kinds, keys)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: insert: fetch duplicates: %w", err)
	}
	return res, fillDuplicates(params, res, existing)
}

// uniqueKey is the scope of a unique key: one kind.
type uniqueKey struct{ kind, key string }

// uniqueKeys is a list of unique keys.
type uniqueKeys []uniqueKey

// columns returns the kinds and the keys of ks, as query arrays.
func (ks uniqueKeys) columns() (kinds, keys []string) {
	for _, k := range ks {
		kinds, keys = append(kinds, k.kind), append(keys, k.key)
	}
	return kinds, keys
}

// matchInserted pairs the inserted rows with params: by kind and unique
// key, else in order (ids are assigned in params order). It returns the
// unique keys of params that were not inserted.
func matchInserted(params []*driver.InsertParams, rows []*leasehold.JobRow) ([]*leasehold.InsertResult, uniqueKeys, error) {
	byKey := make(map[uniqueKey]*leasehold.JobRow)
	var plain []*leasehold.JobRow
	for _, j := range rows {
		if j.UniqueKey != "" {
			byKey[uniqueKey{j.Kind, j.UniqueKey}] = j
		} else {
			plain = append(plain, j)
		}
	}
	sort.Slice(plain, func(a, b int) bool { return plain[a].ID < plain[b].ID })
	res := make([]*leasehold.InsertResult, len(params))
	seen := make(map[uniqueKey]bool)
	var missing uniqueKeys
	for i, p := range params {
		k := uniqueKey{p.Kind, p.UniqueKey}
		switch j, ok := byKey[k]; {
		case p.UniqueKey == "":
			if len(plain) == 0 {
				return nil, nil, fmt.Errorf("pgdriver: insert: fewer rows returned than jobs")
			}
			res[i], plain = &leasehold.InsertResult{Job: plain[0]}, plain[1:]
		case ok:
			res[i] = &leasehold.InsertResult{Job: j, Duplicate: seen[k]}
			seen[k] = true
		default:
			missing = append(missing, k)
		}
	}
	return res, missing, nil
}

// fillDuplicates completes res with the existing jobs of duplicate keys.
func fillDuplicates(params []*driver.InsertParams, res []*leasehold.InsertResult, existing []*leasehold.JobRow) error {
	byKey := make(map[uniqueKey]*leasehold.JobRow, len(existing))
	for _, j := range existing {
		byKey[uniqueKey{j.Kind, j.UniqueKey}] = j
	}
	for i, p := range params {
		if res[i] != nil {
			continue
		}
		j, ok := byKey[uniqueKey{p.Kind, p.UniqueKey}]
		if !ok {
			return fmt.Errorf("pgdriver: insert: unique key %q of kind %s conflicted but no job has it", p.UniqueKey, p.Kind)
		}
		res[i] = &leasehold.InsertResult{Job: j, Duplicate: true}
	}
	return nil
}

// insertArrays holds params column by column, as the unnest parameters of
// insertInput.
type insertArrays struct {
	kinds, queues, args, metadata, keys []string
	priorities, maxAttempts             []int32
	runAt                               []pgtype.Timestamptz
	runIn                               []int64
	notify                              []bool
	uuids                               []pgtype.UUID
}

func newInsertArrays(params []*driver.InsertParams) (*insertArrays, error) {
	n := len(params)
	a := &insertArrays{
		kinds: make([]string, n), queues: make([]string, n), args: make([]string, n),
		metadata: make([]string, n), keys: make([]string, n),
		priorities: make([]int32, n), maxAttempts: make([]int32, n),
		runAt: make([]pgtype.Timestamptz, n), runIn: make([]int64, n), notify: make([]bool, n),
		uuids: make([]pgtype.UUID, n),
	}
	for i, p := range params {
		u, err := jobUUID(p)
		if err != nil {
			return nil, fmt.Errorf("pgdriver: insert job %d: %w", i, err)
		}
		a.uuids[i] = u
		a.kinds[i], a.queues[i], a.keys[i] = p.Kind, p.Queue, p.UniqueKey
		a.args[i], a.metadata[i] = jsonOrEmpty(p.Args), jsonOrEmpty(p.Metadata)
		a.priorities[i], a.maxAttempts[i] = int32(p.Priority), int32(p.MaxAttempts)
		a.runAt[i] = pgtype.Timestamptz{Time: p.RunAt, Valid: !p.RunAt.IsZero()}
		a.runIn[i] = micros(p.RunIn)
		a.notify[i] = p.Notify
	}
	return a, nil
}

func (a *insertArrays) params() []any {
	return []any{a.kinds, a.queues, a.priorities, a.maxAttempts, a.args, a.metadata,
		a.keys, a.runAt, a.runIn, a.notify, a.uuids}
}

// jobUUID returns p.UUID, or a new random UUID when it is empty.
func jobUUID(p *driver.InsertParams) (pgtype.UUID, error) {
	if p.UUID == "" {
		return pgtype.UUID{Bytes: uuid.New(), Valid: true}, nil
	}
	u, err := uuid.Parse(p.UUID)
	if err != nil {
		return pgtype.UUID{}, fmt.Errorf("%w: invalid UUID %q: %v", leasehold.ErrInvalidArgs, p.UUID, err)
	}
	return pgtype.UUID{Bytes: u, Valid: true}, nil
}

// jsonOrEmpty returns b as a string, or an empty JSON object when b is
// empty.
func jsonOrEmpty(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}

// notifyQueues returns the distinct queues of params with Notify set.
func notifyQueues(params []*driver.InsertParams) []string {
	seen := make(map[string]bool)
	var queues []string
	for _, p := range params {
		if p.Notify && !seen[p.Queue] {
			seen[p.Queue] = true
			queues = append(queues, p.Queue)
		}
	}
	return queues
}
