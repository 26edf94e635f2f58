-- 015: each schedule's grace period (PeriodicJob.Grace, in microseconds),
-- recorded by the processes that run it, so that `leasehold periodic list`
-- (view.Overdue) judges a schedule overdue by its own grace rather than
-- the default. NULL: no process of this version has recorded it yet.
ALTER TABLE leasehold_periodic ADD COLUMN IF NOT EXISTS grace_us bigint
    CHECK (grace_us > 0);
