-- depends: 0047.event-run-steps-resource
-- The cleaning_up status (a cancel or a failure with cleanup, or cleanup_on: the run runs the
-- reverts of what it created) and the status it reaches once they are over (`cleanup_target`:
-- cancelled, failed or completed; NULL for a run that never cleaned up).
ALTER TABLE event_runs
  DROP CONSTRAINT event_runs_status_known,
  ADD CONSTRAINT event_runs_status_of_lifecycle CHECK (status IN
    ('scheduled','starting','running','paused','ending','cleaning_up','completed','cancelled','failed','missed')),
  ADD COLUMN cleanup_target VARCHAR(16) NULL,
  ADD CONSTRAINT event_runs_cleanup_target_known CHECK (cleanup_target IS NULL OR cleanup_target IN ('cancelled', 'failed', 'completed'))
