-- 016: finished jobs by queue, then finish time.
--
-- A client's retention (Config.FinishedRetention) deletes the finished
-- jobs of its own queues only, and a list of one queue's finished jobs by
-- finish time (ListParams{Queue, ByFinish}: the dashboard's jobs page
-- filtered by queue and state, a scan of one queue's recent completions)
-- reads them in that order. leasehold_jobs_finished_idx, by finish time
-- alone, makes either walk the finished jobs of every queue until it has
-- found enough of its own: a quiet queue beside a busy one reads the busy
-- one's jobs too, up to the whole table. This index leads with the
-- queue. It is partial, as leasehold_jobs_finished_idx is: only a job's
-- move to a finished state writes an entry, so a claim, a heartbeat or a
-- retry of a pending job costs nothing more. leasehold_jobs_finished_idx
-- stays, for the purge of every queue (PurgeFinished, `leasehold purge`)
-- and the lists of finished jobs of every queue. The index is built here
-- with a scan of the table that blocks writes to it while it runs (about a
-- second per million finished jobs).
CREATE INDEX IF NOT EXISTS leasehold_jobs_finished_queue_idx
    ON leasehold_jobs (queue, finished_at, id)
    WHERE status IN ('completed', 'failed', 'cancelled');
