-- 001: the leasehold schema. Times are INTEGER Unix microseconds taken from
-- SQLite's own clock; booleans are INTEGER 0/1; JSON is TEXT.

CREATE TABLE IF NOT EXISTS leasehold_jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    kind             TEXT    NOT NULL,
    queue            TEXT    NOT NULL,
    status           TEXT    NOT NULL CHECK (status IN
                         ('pending', 'processing', 'completed', 'failed', 'cancelled', 'stuck')),
    priority         INTEGER NOT NULL DEFAULT 0,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    free_attempts    INTEGER NOT NULL DEFAULT 0,
    args             TEXT    NOT NULL CHECK (json_valid(args)),
    metadata         TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    unique_key       TEXT,
    run_at           INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_until      INTEGER,
    heartbeat_at     INTEGER,
    finished_at      INTEGER,
    last_error       TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1))
) STRICT;

-- Ready jobs, in claim order.
CREATE INDEX IF NOT EXISTS leasehold_jobs_ready
    ON leasehold_jobs (queue, priority, run_at, id) WHERE status = 'pending';

-- Live and expired leases (takeover, watcher, stats).
CREATE INDEX IF NOT EXISTS leasehold_jobs_leases
    ON leasehold_jobs (lease_until) WHERE status = 'processing';

CREATE UNIQUE INDEX IF NOT EXISTS leasehold_jobs_unique_key
    ON leasehold_jobs (unique_key) WHERE unique_key IS NOT NULL;

-- Retention cleaner.
CREATE INDEX IF NOT EXISTS leasehold_jobs_finished
    ON leasehold_jobs (finished_at) WHERE status IN ('completed', 'failed', 'cancelled');

-- QueueStats counts (covering) and ListJobs by queue and state.
CREATE INDEX IF NOT EXISTS leasehold_jobs_queue_status
    ON leasehold_jobs (queue, status);

CREATE TABLE IF NOT EXISTS leasehold_attempts (
    job_id       INTEGER NOT NULL,
    attempt      INTEGER NOT NULL,
    owner        TEXT    NOT NULL,
    claimed_at   INTEGER NOT NULL,
    heartbeat_at INTEGER,
    ended_at     INTEGER,
    outcome      TEXT,
    error        TEXT,
    PRIMARY KEY (job_id, attempt)
) STRICT, WITHOUT ROWID;
