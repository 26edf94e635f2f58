-- 002: a random UUID per job, the source of its idempotency key: unlike the
-- id, it is never reissued to another job. ADD COLUMN cannot take an
-- expression default, so existing jobs get a random version 4 UUID each
-- from randomblob, and the unique index enforces one job per UUID. The
-- driver always supplies the value on insert.
ALTER TABLE leasehold_jobs ADD COLUMN uuid TEXT NOT NULL DEFAULT '';

UPDATE leasehold_jobs SET uuid = lower(
    hex(randomblob(4)) || '-' ||
    hex(randomblob(2)) || '-' ||
    '4' || substr(hex(randomblob(2)), 2) || '-' ||
    substr('89ab', 1 + (random() & 3), 1) || substr(hex(randomblob(2)), 2) || '-' ||
    hex(randomblob(6)));

CREATE UNIQUE INDEX IF NOT EXISTS leasehold_jobs_uuid ON leasehold_jobs (uuid);

-- A unique key is unique per kind, not across kinds.
DROP INDEX IF EXISTS leasehold_jobs_unique_key;

CREATE UNIQUE INDEX IF NOT EXISTS leasehold_jobs_kind_unique_key
    ON leasehold_jobs (kind, unique_key) WHERE unique_key IS NOT NULL;
