-- 013: an UPDATE whose SET list names a job's id or UUID is refused.
--
-- leasehold_job_uuids (012) holds each job's UUID and id, written by the
-- triggers of inserts and deletes. An operator's UPDATE of either column
-- would leave it stale: a UUID the table no longer names could be given to
-- a second job, and the UUID it still names would refuse a new job that
-- holds no copy of it. A UUID is the job's idempotency key, and the id is
-- what its history rows and every lease's fence name: neither is ever
-- rewritten by the driver.
--
-- The trigger is statement-level, and fires only for an UPDATE whose SET
-- list names id or uuid, before it changes a row: the claims and ends of
-- jobs, which name neither, never run it (a row-level trigger would read
-- every updated row once more).
CREATE OR REPLACE FUNCTION leasehold_jobs_identity_fixed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'leasehold: a job''s id and uuid cannot be changed'
        USING ERRCODE = 'integrity_constraint_violation',
              HINT = 'The uuid is the job''s idempotency key, kept unique in leasehold_job_uuids, '
                  || 'and the id is what its attempt history and leases name. Insert a new job instead.';
END
$$;

DROP TRIGGER IF EXISTS leasehold_jobs_identity_fixed ON leasehold_jobs;
CREATE TRIGGER leasehold_jobs_identity_fixed
    BEFORE UPDATE OF id, uuid ON leasehold_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION leasehold_jobs_identity_fixed();
