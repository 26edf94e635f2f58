-- 009: storage parameters for a queue's tables, whose rows are updated
-- within seconds of their insert and deleted by retention.
--
-- Vacuum by the number of dead rows, not by a fraction of the table: the
-- default (20% of the rows) lets a table that keeps a day of finished
-- jobs pile up millions of dead row versions in the small part that is
-- hot (the ready and lease indexes, the pages of pending and processing
-- jobs) before autovacuum comes, and claims slow down as it grows.
-- Inserts count too, so that a table of new jobs gets its visibility map
-- and statistics while its jobs wait. Both tables alike.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['leasehold_jobs', 'leasehold_attempts'] LOOP
        EXECUTE format('ALTER TABLE %I SET (
            autovacuum_vacuum_scale_factor = 0,
            autovacuum_vacuum_threshold = 10000,
            autovacuum_vacuum_insert_scale_factor = 0,
            autovacuum_vacuum_insert_threshold = 10000,
            autovacuum_analyze_scale_factor = 0,
            autovacuum_analyze_threshold = 10000)', t);
    END LOOP;
END
$$;
