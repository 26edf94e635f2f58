-- 003: one row per queue an operator has paused or resumed. A queue with
-- a non-NULL paused_at is paused: Claim and ClaimByID lease none of its
-- jobs (the claim statement itself checks, through the primary key).
-- Queues never paused have no row; a resumed queue keeps its row with
-- paused_at NULL. No foreign key: queues exist by their jobs' names.
CREATE TABLE IF NOT EXISTS leasehold_queues (
    name       text        PRIMARY KEY,
    paused_at  timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
);
