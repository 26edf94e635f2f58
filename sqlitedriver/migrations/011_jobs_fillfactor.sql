-- 011: the PostgreSQL driver's 011 sets a fillfactor on leasehold_jobs.
-- SQLite has none (an update rewrites the row in its B-tree page), so
-- there is nothing to set; the version is recorded so that both drivers
-- number their schemas alike.
SELECT 1;
