-- 015: each schedule's grace period (PeriodicJob.Grace, in microseconds),
-- recorded by the processes that run it, so that `leasehold periodic list`
-- and the dashboard judge a schedule overdue by its own grace rather than
-- the default. NULL: recorded by a process from before this version.
ALTER TABLE leasehold_periodic ADD COLUMN grace_us integer CHECK (grace_us > 0);
