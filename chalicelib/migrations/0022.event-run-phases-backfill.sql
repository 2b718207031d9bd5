-- depends: 0021.event-runs-ending-phase
-- Runs started before phase rows existed get their main phases' rows from their version's
-- document (the runner's numbering: authored order from 1), so the API names their phases
-- too. Their times are not known: a phase the run reached is taken as opened when the run
-- started, and one it has left (or every one of a completed run) as drained then too.
INSERT IGNORE INTO event_run_phases (run_id, number, kind, name, opened_at, drained_at)
SELECT r.id, p.number, 'main', LEFT(COALESCE(NULLIF(p.name, ''), CONCAT('phase ', p.number)), 200),
       IF(p.number <= r.current_phase, COALESCE(r.started_at, r.created_at), NULL),
       IF(p.number < r.current_phase OR r.status = 'completed', COALESCE(r.started_at, r.created_at), NULL)
  FROM event_runs r
  JOIN event_definition_versions v ON v.definition_id = r.definition_id AND v.version = r.definition_version
  JOIN JSON_TABLE(v.document, '$.phases[*]' COLUMNS (number FOR ORDINALITY, name VARCHAR(200) PATH '$.name')) p
 WHERE r.current_phase IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM event_run_phases e WHERE e.run_id = r.id)
