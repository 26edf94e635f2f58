-- 012: the PostgreSQL driver's 012 moves the uniqueness of job UUIDs out
-- of an index on leasehold_jobs, which each of its non-HOT updates wrote
-- to. SQLite writes an index entry only when a column the index names
-- changes, so its UUID index (002) costs one entry per job, at insert,
-- and stays; the version is recorded so that both drivers number their
-- schemas alike.
SELECT 1;
