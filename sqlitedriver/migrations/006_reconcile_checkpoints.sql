-- 006: the reconciling state and durable checkpoints.
--
-- A job whose lease expired in a queue that reconciles becomes
-- 'reconciling', with a reconcile job inserted in the same transaction.
-- The status CHECK lives in the table's definition, which SQLite cannot
-- alter; the new check only allows one more value, which no existing row
-- can break, so the definition is edited in place, as SQLite documents for
-- loosening a CHECK constraint (https://sqlite.org/lang_altertable.html,
-- "Making Other Kinds Of Table Schema Changes"), rather than rebuilding
-- the table and every index on it. The tables created below change the
-- schema cookie, so every connection reads the new definition; RESET makes
-- this one read it at once.
PRAGMA writable_schema = ON;

UPDATE sqlite_schema
SET sql = replace(sql, '''cancelled'', ''stuck'')', '''cancelled'', ''stuck'', ''reconciling'')')
WHERE type = 'table' AND name = 'leasehold_jobs' AND instr(sql, '''reconciling''') = 0;

PRAGMA writable_schema = RESET;

-- The reconciler's decision, on the expired attempt's history row.
ALTER TABLE leasehold_attempts ADD COLUMN resolution TEXT;

-- Checkpoints a handler records under its lease; seq orders them. No
-- foreign key: DeleteJob and Purge delete them with the job.
CREATE TABLE IF NOT EXISTS leasehold_checkpoints (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id     INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    data       TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(data)),
    written_at INTEGER NOT NULL
) STRICT;

CREATE INDEX IF NOT EXISTS leasehold_checkpoints_job
    ON leasehold_checkpoints (job_id, seq);
