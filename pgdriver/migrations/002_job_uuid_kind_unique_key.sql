-- 002: a random UUID per job, the source of its idempotency key: unlike the
-- id, it is never reissued to another job (a new primary can reissue ids
-- lost in an asynchronous failover). Existing jobs get one each. The
-- volatile default rewrites the table once; it stays as a safety net, but
-- the driver always supplies the value.
ALTER TABLE leasehold_jobs
    ADD COLUMN IF NOT EXISTS uuid uuid NOT NULL DEFAULT gen_random_uuid();

CREATE UNIQUE INDEX IF NOT EXISTS leasehold_jobs_uuid_idx
    ON leasehold_jobs (uuid);

-- A unique key is unique per kind, not across kinds.
DROP INDEX IF EXISTS leasehold_jobs_unique_key_idx;

CREATE UNIQUE INDEX IF NOT EXISTS leasehold_jobs_kind_unique_key_idx
    ON leasehold_jobs (kind, unique_key)
    WHERE unique_key IS NOT NULL;
