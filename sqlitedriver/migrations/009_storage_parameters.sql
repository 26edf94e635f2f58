-- 009: storage parameters (see the PostgreSQL driver's 009). SQLite has
-- neither fillfactor nor autovacuum thresholds: its pages are reused
-- from the free list as soon as a transaction frees them, so there is
-- nothing to set; the version is recorded so both drivers number their
-- schemas alike.
SELECT 1;
