-- depends: 0021.event-runs-ending-phase
-- Before the CHECK of 0031: finished_at is set exactly when a run is terminal. Every
-- move the engine made already kept that; a row written by hand that did not is
-- brought into line (a terminal run without finished_at takes its updated_at).
UPDATE event_runs
   SET finished_at = IF(status IN ('completed', 'cancelled', 'failed', 'missed'), COALESCE(finished_at, updated_at), NULL)
 WHERE (status IN ('completed', 'cancelled', 'failed', 'missed')) <> (finished_at IS NOT NULL)
