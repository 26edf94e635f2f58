-- 008: an attempt's history row is written once, when the attempt ends
-- (see the PostgreSQL driver's 008 for the reasons). The job row holds
-- the open attempt; claimed_at (Unix microseconds, database clock) is set
-- by each claim and, like heartbeat_at, kept when the attempt ends. Jobs claimed before this
-- migration keep their open history row, which their end updates. The
-- window columns stay as they are: SQLite stores a 0 in no more room than
-- a NULL.
ALTER TABLE leasehold_jobs ADD COLUMN claimed_at INTEGER;
