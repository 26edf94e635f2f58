-- 014: the open history rows left by claims from before migration 008,
-- indexed on their own.
--
-- Since 008 a history row is written once, ended, when its attempt ends,
-- and the statement that ends attempts first ends instead the open row
-- (ended_at NULL) that a claim by older code inserted, if there is one.
-- Looking for it by primary key cost every finished job one probe of
-- leasehold_attempts' primary key that found nothing: 6-11 % of the
-- server's time for a finish, measured in drains (docs/benchmarks.md,
-- "Open history rows looked for once per statement"). With this index of the open rows alone, the
-- statement asks once whether any open row exists, and probes for each
-- attempt only when one does. No row written since 008 is open, so the
-- index stays empty and costs no write; it is built once here, with a
-- scan of the table that blocks writes to it while it runs.
CREATE INDEX IF NOT EXISTS leasehold_attempts_open_idx
    ON leasehold_attempts (job_id, attempt)
    WHERE ended_at IS NULL;
