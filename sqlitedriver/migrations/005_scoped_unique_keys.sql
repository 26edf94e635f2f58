-- 005: unique keys scoped by state and time. A job inserted with the
-- UniqueWhileUnfinished scope or a UniqueWindow keeps its key in
-- unique_scoped_key, with unique_key NULL, so the index of plain keys
-- (leasehold_jobs_kind_unique_key, from 002) never sees it; it also
-- records its scope, its window's length and the start of the window it
-- was inserted in (Unix microseconds of the database clock; 0 without a
-- window). Jobs with a plain key, those from before the upgrade among
-- them, are untouched: their key stays unique per kind for as long as the
-- job exists.
ALTER TABLE leasehold_jobs ADD COLUMN unique_scoped_key TEXT;

ALTER TABLE leasehold_jobs ADD COLUMN unique_scope TEXT
    CHECK (unique_scope IN ('forever', 'unfinished')
        AND (unique_scoped_key IS NULL) = (unique_scope IS NULL)
        AND (unique_key IS NULL OR unique_scoped_key IS NULL));

ALTER TABLE leasehold_jobs ADD COLUMN unique_window INTEGER NOT NULL DEFAULT 0;

ALTER TABLE leasehold_jobs ADD COLUMN unique_window_start INTEGER NOT NULL DEFAULT 0;

-- A scoped key is unique among the jobs of its kind with the same key,
-- scope and window that hold it: a 'forever' job for as long as it
-- exists, an 'unfinished' one until it is completed, failed or cancelled
-- (every other state holds it, states added later included). The insert
-- relies on this index to let exactly one of racing inserts win.
CREATE UNIQUE INDEX IF NOT EXISTS leasehold_jobs_scoped_unique_key
    ON leasehold_jobs (kind, unique_scoped_key, unique_scope, unique_window, unique_window_start)
    WHERE unique_scoped_key IS NOT NULL
        AND (unique_scope = 'forever' OR status NOT IN ('completed', 'failed', 'cancelled'));
