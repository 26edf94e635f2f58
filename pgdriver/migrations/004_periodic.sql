-- 004: one row per schedule of periodic jobs. Every process running a
-- schedule claims each slot with one conditional write on its row
-- (last_slot < the slot), in the transaction that inserts the slot's job,
-- so exactly one process wins each slot without a leader. next_slot is
-- what the processes computed, for operators (`leasehold periodic list`).
CREATE TABLE IF NOT EXISTS leasehold_periodic (
    name        text        PRIMARY KEY,
    spec        text        NOT NULL,
    kind        text        NOT NULL,
    queue       text        NOT NULL,
    last_slot   timestamptz,
    last_job_id bigint,
    next_slot   timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
