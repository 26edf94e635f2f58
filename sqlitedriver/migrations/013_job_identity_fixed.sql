-- 013: an UPDATE whose SET list names a job's id or UUID is refused, as
-- in the PostgreSQL driver's 013. The UUID is the job's idempotency key,
-- and the id is what its history rows and every lease's fence name: an
-- operator's UPDATE of either would leave the history, or a client's
-- idempotent insert, pointing at the wrong job.
--
-- SQLite compiles an UPDATE OF trigger only into statements whose SET list
-- names one of its columns: the claims and ends of jobs, which name
-- neither, never run it.
CREATE TRIGGER IF NOT EXISTS leasehold_jobs_identity_fixed
BEFORE UPDATE OF id, uuid ON leasehold_jobs
FOR EACH ROW
BEGIN
    SELECT RAISE(ABORT, 'leasehold: a job''s id and uuid cannot be changed (the uuid is its idempotency key, the id what its history and leases name): insert a new job instead');
END;
