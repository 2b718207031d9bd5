-- depends: 0022.event-run-phases-backfill
-- ... and the ending's row, for a version whose ending has steps: the phase after the
-- document's last (the runner's numbering), opened once the run went into ending, drained
-- once it completed. Runs with an ending row already (started since 0020) are left alone.
INSERT IGNORE INTO event_run_phases (run_id, number, kind, name, opened_at, drained_at)
SELECT r.id, JSON_LENGTH(v.document, '$.phases') + 1, 'ending', 'ending',
       IF(r.status IN ('ending', 'completed'), COALESCE(r.started_at, r.created_at), NULL),
       IF(r.status = 'completed', COALESCE(r.started_at, r.created_at), NULL)
  FROM event_runs r
  JOIN event_definition_versions v ON v.definition_id = r.definition_id AND v.version = r.definition_version
 WHERE r.current_phase IS NOT NULL
   AND JSON_LENGTH(v.document, '$.ending') > 0
   AND NOT EXISTS (SELECT 1 FROM event_run_phases e WHERE e.run_id = r.id AND e.kind = 'ending')
