-- 008: an attempt's history row is written once, when the attempt ends.
--
-- A claim no longer inserts a row into leasehold_attempts: the job row
-- holds the open attempt (attempt, lease_owner, heartbeat_at, lease_until
-- and, from here on, claimed_at), and whatever ends the attempt (the
-- fenced finish, a takeover at claim, the watcher) inserts its row with
-- its outcome in the same statement. A completed job then leaves two dead
-- row versions (the pending and the processing versions of its job row)
-- instead of three. claimed_at is set by each claim and, like
-- heartbeat_at, kept when the attempt ends (the statement that ends it
-- copies both into the history row). Jobs claimed before this migration
-- keep their open history row, which their end updates.
ALTER TABLE leasehold_jobs
    ADD COLUMN IF NOT EXISTS claimed_at timestamptz;

-- The window columns of 005 hold a value only for a scoped key: the
-- insert writes NULL for every other job, which saves their 16 bytes in
-- each version of its row. The partial unique index of scoped keys needs
-- them set (NULLs would never conflict), which the check enforces for new
-- rows; rows from before hold 0, which is valid (NOT VALID skips the
-- scan of the table).
ALTER TABLE leasehold_jobs
    ALTER COLUMN unique_window DROP NOT NULL,
    ALTER COLUMN unique_window DROP DEFAULT,
    ALTER COLUMN unique_window_start DROP NOT NULL,
    ALTER COLUMN unique_window_start DROP DEFAULT,
    ADD CONSTRAINT leasehold_jobs_unique_window_check CHECK (
        unique_scoped_key IS NULL
        OR (unique_window IS NOT NULL AND unique_window_start IS NOT NULL)) NOT VALID;
