package pgdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
		$7::text[], $8::timestamptz[], $9::bigint[], $10::boolean[], $11::uuid[], $12::text[], $13::bigint[])
		WITH ORDINALITY AS t(kind, queue, priority, max_attempts, args, metadata,
			unique_key, run_at, run_in, notify, uuid, unique_scope, unique_window, ord)
)`

// insertColumns are the leasehold_jobs columns an insert sets, and
// insertValues their values from the input's columns.
const (
	insertColumns = `kind, queue, status, priority, max_attempts,
		args, metadata, unique_key, unique_scoped_key, unique_scope, unique_window, unique_window_start,
		run_at, created_at, uuid`
	insertValues = `kind, queue, 'pending', priority, max_attempts, args::jsonb, metadata::jsonb,
		CASE WHEN unique_scope = '' THEN nullif(unique_key, '') END,
		CASE WHEN unique_scope <> '' THEN unique_key END,
		nullif(unique_scope, ''), CASE WHEN unique_scope <> '' THEN unique_window END,
		CASE WHEN unique_scope <> '' THEN ` + windowStartSQL + ` END,
		coalesce(run_at, statement_timestamp() + run_in * interval '1 microsecond'),
		statement_timestamp(), uuid`
)

// insertRows inserts a batch without unique keys, in batch order, its ids
// drawn by the column's default. A job without a scoped key has no window
// (NULL, not 0: a smaller row version, migration 008).
const insertRows = `INSERT INTO leasehold_jobs (` + insertColumns + `)
	SELECT ` + insertValues + `
	FROM input ORDER BY ord
	ON CONFLICT DO NOTHING`

// keyedInput is insertInput with the job ids drawn in batch order (ord):
// ids are the last key of claim order, and insertKeyedRows inserts the
// rows in another order. The CTE is materialized (nextval is volatile), so
// each job draws one id.
const keyedInput = insertInput + `,
numbered AS (
	SELECT *, nextval((SELECT pg_get_serial_sequence('leasehold_jobs', 'id')::regclass)) AS id
	FROM input ORDER BY ord
)`

// insertKeyedRows skips a job whose unique key another job holds. A plain
// key goes to unique_key, a scoped one (unique_scope set) to
// unique_scoped_key with its window. The conflict has no target: a plain
// key conflicts on one partial unique index, a scoped key on another, and
// the caller reads the job that holds a skipped key (blockersSQL).
//
// The rows go in the order of their keys, the same in every statement,
// not in batch order: an insert takes each key's index entry, held until
// its transaction ends, and waits for another transaction's uncommitted
// entry of the same key. Two batches taking the same keys in opposite
// orders would each wait for the other, and PostgreSQL would end one with
// a deadlock error; taken in one order, one batch waits, the other runs
// through. ord breaks ties, so the first job of a key in the batch is the
// one inserted; the ids come from keyedInput, in batch order. "C" orders
// by bytes: the same order everywhere, whatever the database's collation.
const insertKeyedRows = `INSERT INTO leasehold_jobs (id, ` + insertColumns + `)
	SELECT id, ` + insertValues + `
	FROM numbered
	ORDER BY kind COLLATE "C", unique_scope COLLATE "C", unique_key COLLATE "C", unique_window, ord
	ON CONFLICT DO NOTHING`

// insertNotes sends one notification per distinct queue of the jobs with
// notify set (the one-time filter of the statements that use it makes it
// run exactly once; NOTIFY fires at commit).
const insertNotes = `note AS (
	SELECT count(pg_notify('` + notifyChannel + `', queue)) AS n
	FROM (SELECT DISTINCT queue FROM input WHERE notify) q
)`

// insertSQL inserts a batch without unique keys and returns the new rows,
// and sends its notifications (insertNotes).
const insertSQL = `WITH ` + insertInput + `,
ins AS (` + insertRows + ` RETURNING *),
` + insertNotes + `
SELECT ` + jobColumns + ` FROM ins WHERE (SELECT n FROM note) >= 0 ORDER BY id`

// insertQuietSQL is insertSQL without the notifications, for the driver's
// own transactions: the notifier sends them, coalesced, after the commit.
const insertQuietSQL = `WITH ` + insertInput + `,
ins AS (` + insertRows + ` RETURNING *)
SELECT ` + jobColumns + ` FROM ins ORDER BY id`

// insertKeyedSQL and insertKeyedQuietSQL are insertSQL and insertQuietSQL
// for a batch with a unique key. Each row starts with the statement's
// clock (nowMicrosSQL), the one its windows start from, for the read of
// the holders of the keys it skipped (blockersAtSQL).
const (
	insertKeyedSQL = `WITH ` + keyedInput + `,
ins AS (` + insertKeyedRows + ` RETURNING *),
` + insertNotes + `
SELECT ` + nowMicrosSQL + `, ` + jobColumns + ` FROM ins WHERE (SELECT n FROM note) >= 0 ORDER BY id`
	insertKeyedQuietSQL = `WITH ` + keyedInput + `,
ins AS (` + insertKeyedRows + ` RETURNING *)
SELECT ` + nowMicrosSQL + `, ` + jobColumns + ` FROM ins ORDER BY id`
)

// insertBulkSQL is InsertBulk's statement for a batch with a unique key.
const insertBulkSQL = `WITH ` + keyedInput + ` ` + insertKeyedRows

// insertStatement is the statement of one round of Insert.
type insertStatement struct {
	sql string
	// clocked is set when each row returned starts with the statement's
	// clock (a batch with a unique key).
	clocked bool
}

// insertStatementFor returns the statement for params: with notifications
// (in a caller's transaction) or without, and in key order for a batch
// with a unique key.
func insertStatementFor(params []*driver.InsertParams, notify bool) insertStatement {
	switch keyed := anyKeyed(params); {
	case keyed && notify:
		return insertStatement{insertKeyedSQL, true}
	case keyed:
		return insertStatement{insertKeyedQuietSQL, true}
	case notify:
		return insertStatement{sql: insertSQL}
	default:
		return insertStatement{sql: insertQuietSQL}
	}
}

// maxInsertRounds bounds the tries of Insert at a batch with a unique
// key: a try ends either with each job inserted or with the job that
// holds its key, except when that job left the key's scope (it finished,
// or was deleted) between the insert and the read, which takes another
// try (a new round in a caller's transaction, the whole batch again in a
// new transaction of the driver's own).
const maxInsertRounds = 10

// errKeyFreed ends a transaction of insertKeyed in which the holder of a
// key the batch skipped left the key's scope before the read of the
// holders: the batch is inserted again, whole, in a new transaction.
var errKeyFreed = errors.New("pgdriver: insert: a unique key's holder left its scope during the insert")

// Insert inserts jobs in one statement, in tx when it is non-nil (see the
// package documentation for accepted types). A job whose unique key
// another job holds is returned as a duplicate of that job. Results are in
// the order of params. The hints for jobs with Notify are sent at tx's
// commit, or, without tx, by the notifier just after the insert commits.
//
// Without tx, a batch with a unique key runs in a transaction of its own
// (insertKeyed): a key held by another job takes a second statement (the
// read of the holder), and a failure there must not leave the batch's
// other jobs inserted under an error a caller would retry. A batch
// without keys is one statement. The server ends that transaction,
// inserting nothing, if it sits idle between statements past
// heldIdleTimeout, so that a client cut off inside it does not keep other
// inserts of its keys waiting.
//
// A batch with a unique key is inserted in key order (insertKeyedRows), so
// that racing batches with the same keys in any order do not deadlock.
// In tx, the caller's earlier statements may hold other keys, taken in
// another order, and so may the first round of this insert when a key's
// holder left the key's scope before the read of the holders (its jobs
// are inserted in a next round of tx): a deadlock there (PostgreSQL's
// error 40P01, which ends tx) is the caller's to retry with a new
// transaction, as for any statement of its own.
func (d *Driver) Insert(ctx context.Context, tx any, params []*driver.InsertParams) ([]*leasehold.InsertResult, error) {
	q, err := d.querierFor(tx)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 {
		return nil, nil
	}
	if tx != nil {
		return d.insertRounds(ctx, q, insertStatementFor(params, true), params)
	}
	var res []*leasehold.InsertResult
	if stmt := insertStatementFor(params, false); stmt.clocked {
		res, err = d.insertKeyed(ctx, stmt, params)
	} else {
		res, err = d.insertRounds(ctx, q, stmt, params)
	}
	if err != nil {
		return nil, err
	}
	d.notes.request(notifyQueues(params))
	return res, nil
}

// insertKeyed inserts a batch with a unique key in transactions of its
// own, each taking all the batch's keys in one statement, in key order.
// When the holder of a skipped key left the key's scope before the read
// of the holders, the transaction is rolled back and the whole batch
// inserted again in a new one, rather than the freed keys in a second
// statement: that statement would take them after the keys of the first,
// which the transaction still holds, out of key order, and deadlock with
// a racing batch that took a freed key and waits for one of the others.
// A new try also draws the batch's ids anew, in batch order.
func (d *Driver) insertKeyed(ctx context.Context, stmt insertStatement, params []*driver.InsertParams) ([]*leasehold.InsertResult, error) {
	var again []int
	for try := 0; try < maxInsertRounds; try++ {
		res := make([]*leasehold.InsertResult, len(params))
		var inner error
		err := beginBounded(ctx, d.pool, d.heldIdle, func(t pgx.Tx) error {
			again, inner = d.insertRound(ctx, pgxQuerier{t}, stmt, params, allIndexes(len(params)), res)
			if inner == nil && len(again) > 0 {
				return errKeyFreed
			}
			return inner
		})
		switch {
		case err == nil:
			return res, nil
		case errors.Is(err, errKeyFreed):
			continue
		case inner != nil:
			return nil, inner
		default:
			return nil, fmt.Errorf("pgdriver: insert: %w", err)
		}
	}
	return nil, keepsChanging(params[again[0]])
}

// insertRounds inserts params with stmt, round after round, until each
// job is inserted or has the job that holds its key.
func (d *Driver) insertRounds(ctx context.Context, q querier, stmt insertStatement, params []*driver.InsertParams) ([]*leasehold.InsertResult, error) {
	res := make([]*leasehold.InsertResult, len(params))
	todo := allIndexes(len(params))
	var err error
	for round := 0; len(todo) > 0; round++ {
		if round == maxInsertRounds {
			return nil, keepsChanging(params[todo[0]])
		}
		if todo, err = d.insertRound(ctx, q, stmt, params, todo, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// allIndexes returns 0, 1, ..., n-1: the indexes of a whole batch.
func allIndexes(n int) []int {
	todo := make([]int, n)
	for i := range todo {
		todo[i] = i
	}
	return todo
}

// keepsChanging is the error of an insert that gave up after
// maxInsertRounds tries, each meeting a holder of p's key that left the
// key's scope before it was read.
func keepsChanging(p *driver.InsertParams) error {
	return fmt.Errorf("pgdriver: insert: the job holding unique key %q of kind %s keeps changing", p.UniqueKey, p.Kind)
}

// anyKeyed reports whether a job of params has a unique key, scoped or
// not.
func anyKeyed(params []*driver.InsertParams) bool {
	for _, p := range params {
		if p.UniqueKey != "" || p.UniqueScoped() {
			return true
		}
	}
	return false
}

// insertRound inserts params[i] for each i of todo, sets res[i] to the new
// job or to the job that holds its key, and returns the indexes of the jobs
// whose key was held by a job that no longer holds it.
//
// The holders are read at the insert's clock, not at the read's: a window
// may end between the two statements, and the read would then look for a
// job of the batch, inserted in the old window, in the new one, and
// insert its duplicate there. When the insert returned no row (so no
// clock), no job of this round holds another's key, and the read takes
// its own clock, later than the insert's, as a next round's insert would.
func (d *Driver) insertRound(ctx context.Context, q querier, stmt insertStatement,
	params []*driver.InsertParams, todo []int, res []*leasehold.InsertResult) ([]int, error) {
	batch := make([]*driver.InsertParams, len(todo))
	for k, i := range todo {
		batch[k] = params[i]
	}
	arrays, err := newInsertArrays(batch)
	if err != nil {
		return nil, err
	}
	var clock pgtype.Int8
	js := newJobScan(&d.names)
	scan := js.scan
	if stmt.clocked {
		scan = func(r scanner) (*leasehold.JobRow, error) { return js.scan(prefixScanner{r, &clock}) }
	}
	inserted, err := collect(ctx, q, scan, stmt.sql, arrays.params()...)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: insert: %w", uuidTakenError(err))
	}
	skipped, err := matchInserted(batch, arrays, inserted, todo, res)
	if err != nil || len(skipped) == 0 {
		return nil, err
	}
	return d.fillBlockers(ctx, q, params, skipped, res, clock)
}

// matchInserted sets res[todo[k]] to the inserted row of batch[k], found
// by its UUID, and returns the indexes (in params) of the jobs skipped.
func matchInserted(batch []*driver.InsertParams, arrays *insertArrays, rows []*leasehold.JobRow,
	todo []int, res []*leasehold.InsertResult) ([]int, error) {
	byUUID := make(map[string]*leasehold.JobRow, len(rows))
	for _, j := range rows {
		byUUID[j.UUID] = j
	}
	var skipped []int
	for k, p := range batch {
		if j, ok := byUUID[arrays.uuids[k].String()]; ok {
			res[todo[k]] = &leasehold.InsertResult{Job: j}
			continue
		}
		if p.UniqueKey == "" {
			return nil, fmt.Errorf("pgdriver: insert: %s job %d without a unique key (UUID %s) was not inserted",
				p.Kind, todo[k], arrays.uuids[k].String())
		}
		skipped = append(skipped, todo[k])
	}
	return skipped, nil
}

// insertArrays holds params column by column, as the unnest parameters of
// insertInput.
type insertArrays struct {
	kinds, queues, args, metadata, keys, scopes []string
	priorities, maxAttempts                     []int32
	runAt                                       []pgtype.Timestamptz
	runIn, windows                              []int64
	notify                                      []bool
	uuids                                       []pgtype.UUID
}

func newInsertArrays(params []*driver.InsertParams) (*insertArrays, error) {
	n := len(params)
	a := &insertArrays{
		kinds: make([]string, n), queues: make([]string, n), args: make([]string, n),
		metadata: make([]string, n), keys: make([]string, n),
		priorities: make([]int32, n), maxAttempts: make([]int32, n),
		runAt: make([]pgtype.Timestamptz, n), runIn: make([]int64, n), notify: make([]bool, n),
		uuids: make([]pgtype.UUID, n), scopes: make([]string, n), windows: make([]int64, n),
	}
	for i, p := range params {
		u, err := jobUUID(p)
		if err != nil {
			return nil, fmt.Errorf("pgdriver: insert job %d: %w", i, err)
		}
		if err := fitsInt32(p); err != nil {
			return nil, fmt.Errorf("pgdriver: insert job %d: %w", i, err)
		}
		a.uuids[i] = u
		a.kinds[i], a.queues[i], a.keys[i] = p.Kind, p.Queue, p.UniqueKey
		a.args[i], a.metadata[i] = jsonOrEmpty(p.Args), jsonOrEmpty(p.Metadata)
		a.priorities[i], a.maxAttempts[i] = int32(p.Priority), int32(p.MaxAttempts)
		a.runAt[i] = pgtype.Timestamptz{Time: p.RunAt, Valid: !p.RunAt.IsZero()}
		a.runIn[i] = micros(p.RunIn)
		a.notify[i] = p.Notify
		a.scopes[i] = p.UniqueScope()
		if a.scopes[i] != "" {
			a.windows[i] = micros(p.UniqueWindow)
		}
	}
	return a, nil
}

func (a *insertArrays) params() []any {
	return []any{a.kinds, a.queues, a.priorities, a.maxAttempts, a.args, a.metadata,
		a.keys, a.runAt, a.runIn, a.notify, a.uuids, a.scopes, a.windows}
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

// uuidsTable holds the UUID of every job, unique (migration 012).
const uuidsTable = "leasehold_job_uuids"

// uuidTakenError returns err, or, when err is a violation of the primary
// key of uuidsTable (a job given a UUID another job holds), an error that
// also wraps leasehold.ErrInvalidArgs.
func uuidTakenError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == uuidsTable+"_pkey" {
		return fmt.Errorf("%w: a job's UUID is another job's: %w", leasehold.ErrInvalidArgs, err)
	}
	return err
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

// fitsInt32 returns an error when p's priority or retry budget does not
// fit the int32 columns that hold them: cast, it would wrap.
func fitsInt32(p *driver.InsertParams) error {
	if p.Priority != int(int32(p.Priority)) || p.MaxAttempts != int(int32(p.MaxAttempts)) {
		return fmt.Errorf("priority %d or max attempts %d outside the columns' range (int32)", p.Priority, p.MaxAttempts)
	}
	return nil
}
