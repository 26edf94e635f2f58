-- 007: what the dashboard reads cheaply at any table size (see the
-- PostgreSQL driver's 007 for the reasons).
--
-- Jobs that did not simply complete, in id order: a job that completes
-- never enters it.
CREATE INDEX IF NOT EXISTS leasehold_jobs_flagged_idx
    ON leasehold_jobs (status, id)
    WHERE status NOT IN ('pending', 'processing', 'completed');

-- Finished jobs per minute (Unix microseconds of the minute, database
-- clock), queue and outcome, added to by every client from the outcomes
-- it wrote.
CREATE TABLE IF NOT EXISTS leasehold_throughput (
    minute  INTEGER NOT NULL,
    queue   TEXT    NOT NULL,
    outcome TEXT    NOT NULL,
    jobs    INTEGER NOT NULL,
    PRIMARY KEY (minute, queue, outcome)
) STRICT, WITHOUT ROWID;
