-- depends: 0035.event-runs-waiting-backfill
-- Who has a parked cue, and since when (POST /runs/{id}/steps/{id}/acknowledge): set once,
-- by a compare-and-set on its being parked and not yet acknowledged by anyone else.
ALTER TABLE event_run_steps
  ADD COLUMN acknowledged_by VARCHAR(191) NULL,
  ADD COLUMN acknowledged_at DATETIME(6) NULL,
  ADD CONSTRAINT event_run_steps_acknowledged_with_its_time CHECK ((acknowledged_by IS NULL) = (acknowledged_at IS NULL))
