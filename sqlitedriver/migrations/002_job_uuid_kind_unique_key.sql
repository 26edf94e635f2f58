-- 002: a random UUID per job, the source of its idempotency key: unlike the
-- id, it is never reissued to another job. The driver supplies it on every
-- insert. Jobs that exist already keep no UUID (NULL): their idempotency key
-- stays the id-derived one they had, so an attempt after the upgrade repeats
-- an earlier attempt's outside call instead of making a second one. The
-- unique index allows any number of NULLs.
ALTER TABLE leasehold_jobs ADD COLUMN uuid TEXT;

CREATE UNIQUE INDEX IF NOT EXISTS leasehold_jobs_uuid ON leasehold_jobs (uuid);

-- A unique key is unique per kind, not across kinds.
DROP INDEX IF EXISTS leasehold_jobs_unique_key;

CREATE UNIQUE INDEX IF NOT EXISTS leasehold_jobs_kind_unique_key
    ON leasehold_jobs (kind, unique_key) WHERE unique_key IS NOT NULL;
