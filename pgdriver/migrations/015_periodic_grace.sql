-- 015: each schedule's grace period (PeriodicJob.Grace, in microseconds),
-- recorded by the processes that run it, so that `leasehold periodic list`
-- and the dashboard judge a schedule overdue by its own grace rather than
-- the default. NULL: recorded by a process from before this version.
ALTER TABLE leasehold_periodic ADD COLUMN IF NOT EXISTS grace_us bigint
    CHECK (grace_us > 0);
