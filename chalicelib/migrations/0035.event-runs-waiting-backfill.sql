-- depends: 0034.event-runs-waiting
-- Runs that were waiting before the column existed: a paused run for a resume, a running or
-- ending run whose phase has a parked step for its cue, one whose phase is drained and held by
-- a manual or signal condition for an advance or its signal (waiting.FROM_ROWS, the same rule).
UPDATE event_runs r
   SET r.waiting_for = CASE
     WHEN r.status = 'paused' THEN 'resume'
     WHEN r.status IN ('running', 'ending') AND EXISTS (
          SELECT 1 FROM event_run_steps s WHERE s.run_id = r.id AND s.phase = r.current_phase
             AND s.status = 'running' AND s.claim_expires_at IS NULL) THEN 'cue'
     WHEN r.status IN ('running', 'ending') THEN (
          SELECT IF(p.`signal` IS NULL, 'advance', 'signal') FROM event_run_phases p
           WHERE p.run_id = r.id AND p.number = r.current_phase AND p.drained_at IS NOT NULL
             AND p.`condition` IS NOT NULL AND NOT p.condition_met
             AND JSON_VALUE(p.`condition`, '$.when') <> 'after')
     ELSE NULL END
 WHERE r.status IN ('paused', 'running', 'ending')
