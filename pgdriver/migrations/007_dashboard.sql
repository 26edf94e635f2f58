-- 007: what the dashboard reads cheaply at any table size.
--
-- Jobs that did not simply complete (failed, cancelled, stuck and any
-- state added later), in id order: the jobs page's state filters and the
-- attention page's stuck jobs. A job that completes never enters it, so a
-- drain of successful jobs writes nothing more. Completed jobs are listed
-- by finish time through leasehold_jobs_finished_idx, pending ones
-- through the primary key, processing ones through
-- leasehold_jobs_lease_idx.
CREATE INDEX IF NOT EXISTS leasehold_jobs_flagged_idx
    ON leasehold_jobs (status, id)
    WHERE status NOT IN ('pending', 'processing', 'completed');

-- Finished jobs per minute (database clock), queue and outcome, added to
-- by every client from the outcomes it wrote, a few statements a minute
-- per process rather than one per job: the dashboard's last-hour chart
-- reads at most an hour of rows. The clients that write delete the rows
-- older than a day.
CREATE TABLE IF NOT EXISTS leasehold_throughput (
    minute  timestamptz NOT NULL,
    queue   text        NOT NULL,
    outcome text        NOT NULL,
    jobs    bigint      NOT NULL,
    PRIMARY KEY (minute, queue, outcome)
);
