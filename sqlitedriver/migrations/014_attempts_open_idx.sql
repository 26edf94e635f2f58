-- 014: the PostgreSQL driver's 014 indexes the open history rows left by
-- claims from before migration 008, so that ending an attempt looks for
-- one only when one exists. SQLite ends such a row with an upsert on the
-- primary key, which costs nothing more than the insert's own uniqueness
-- check, so there is nothing to add; the version is recorded so that both
-- drivers number their schemas alike.
SELECT 1;
