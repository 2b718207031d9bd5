-- depends: 0030.event-runs-finished-backfill
-- finished_at is set exactly when the run is terminal (chalicelib/events/lifecycle.py:
-- a move into a terminal status stamps it, and no other move does).
ALTER TABLE event_runs ADD CONSTRAINT event_runs_finished_when_terminal
  CHECK ((status IN ('completed', 'cancelled', 'failed', 'missed')) = (finished_at IS NOT NULL))
