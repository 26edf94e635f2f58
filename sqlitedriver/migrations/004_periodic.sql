-- 004: one row per schedule of periodic jobs. Every process running a
-- schedule claims each slot with one conditional write on its row
-- (last_slot < the slot), in the transaction that inserts the slot's job,
-- so exactly one process wins each slot without a leader. next_slot is
-- what the processes computed, for operators (`leasehold periodic list`).
-- Times are Unix microseconds.
CREATE TABLE IF NOT EXISTS leasehold_periodic (
    name        TEXT    PRIMARY KEY,
    spec        TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    queue       TEXT    NOT NULL,
    last_slot   INTEGER,
    last_job_id INTEGER,
    next_slot   INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
