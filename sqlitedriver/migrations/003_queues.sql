-- 003: one row per queue an operator has paused or resumed. A queue with
-- a non-NULL paused_at (Unix microseconds) is paused: Claim and ClaimByID
-- lease none of its jobs (the claim statement itself checks, through the
-- primary key). Queues never paused have no row; a resumed queue keeps its
-- row with paused_at NULL.
CREATE TABLE IF NOT EXISTS leasehold_queues (
    name       TEXT    PRIMARY KEY,
    paused_at  INTEGER,
    updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
