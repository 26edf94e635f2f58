-- 012: job UUIDs are kept unique in a table of their own, written once
-- per job, instead of by a unique index on leasehold_jobs.
--
-- Neither update of a job's row (its claim, its end) can be HOT (both
-- change status, which the partial indexes name), so each one adds an
-- entry to every full index of the table. A unique index on the random
-- UUIDs took three entries per job, each in a random leaf page.
-- leasehold_job_uuids gets one row and one index entry per job, at
-- insert. Measured on drains of 100,000 jobs against the index, in turn:
-- 1.21-1.44x faster, 1,096-1,097 bytes of WAL per job instead of
-- 1,283-1,286 (docs/benchmarks.md, "UUIDs in a table of their own"). The
-- price is at insert: the trigger adds 10-17 us of server time to an
-- INSERT of one job; COPY of 200,000 jobs ran as fast as before, within
-- the noise.
--
-- Statement-level triggers keep it, whatever inserts or deletes the jobs
-- (the driver's INSERT and COPY, Purge, DeleteJob, a client of an older
-- version, an operator's SQL): after an insert, the new jobs' UUIDs go
-- into leasehold_job_uuids, and a UUID another job holds fails the
-- statement (unique_violation on leasehold_job_uuids_pkey), so no two
-- jobs share one; after a delete, the deleted jobs' UUIDs leave it
-- (looked up by its primary key, however many jobs were deleted), and a
-- TRUNCATE empties it. A job's UUID is never updated. The trigger
-- functions run with the search_path of this migration (the
-- connection's, as for every table of the driver), whatever the
-- search_path of the statement that fires them.
--
-- The triggers are created first: CREATE TRIGGER locks leasehold_jobs
-- against writes until this migration commits, so the copy of the
-- existing UUIDs below misses none. The copy takes as long as a scan of
-- the table.
CREATE TABLE IF NOT EXISTS leasehold_job_uuids (
    uuid   uuid   PRIMARY KEY,
    job_id bigint NOT NULL
);

ALTER TABLE leasehold_job_uuids SET (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 10000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 10000,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 10000);

CREATE OR REPLACE FUNCTION leasehold_job_uuids_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO leasehold_job_uuids (uuid, job_id)
    SELECT uuid, id FROM leasehold_new_jobs WHERE uuid IS NOT NULL;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION leasehold_job_uuids_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM leasehold_job_uuids
    WHERE uuid = ANY (ARRAY(SELECT uuid FROM leasehold_old_jobs WHERE uuid IS NOT NULL));
    RETURN NULL;
END
$$;

CREATE TRIGGER leasehold_jobs_uuid_insert
    AFTER INSERT ON leasehold_jobs
    REFERENCING NEW TABLE AS leasehold_new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION leasehold_job_uuids_insert();

CREATE TRIGGER leasehold_jobs_uuid_delete
    AFTER DELETE ON leasehold_jobs
    REFERENCING OLD TABLE AS leasehold_old_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION leasehold_job_uuids_delete();

CREATE OR REPLACE FUNCTION leasehold_job_uuids_truncate() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    TRUNCATE leasehold_job_uuids;
    RETURN NULL;
END
$$;

CREATE TRIGGER leasehold_jobs_uuid_truncate
    AFTER TRUNCATE ON leasehold_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION leasehold_job_uuids_truncate();

INSERT INTO leasehold_job_uuids (uuid, job_id)
SELECT uuid, id FROM leasehold_jobs WHERE uuid IS NOT NULL;

DROP INDEX IF EXISTS leasehold_jobs_uuid_idx;
