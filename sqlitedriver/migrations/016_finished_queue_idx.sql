-- 016: finished jobs by queue, then finish time (see the PostgreSQL
-- driver's 016): a client's retention deletes the finished jobs of its
-- own queues only, and reads them through this index instead of walking
-- every queue's finished jobs in leasehold_jobs_finished. Partial, so
-- that only a job's move to a finished state writes an entry.
CREATE INDEX IF NOT EXISTS leasehold_jobs_finished_queue_idx
    ON leasehold_jobs (queue, finished_at, id)
    WHERE status IN ('completed', 'failed', 'cancelled');
