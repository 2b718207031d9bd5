-- depends: 0005.event-run-log
-- find_due reads runs in (scheduled_for, id) order across four statuses. An index on
-- (status, scheduled_for) can only return that order per status, so every tick sorted
-- its due runs. due_since is scheduled_for while a run is live and NULL once it is
-- paused or finished, so one index range walks exactly the live runs, already in order,
-- however much history the table holds.
ALTER TABLE event_runs
  ADD COLUMN due_since DATETIME(6)
    GENERATED ALWAYS AS (IF(status IN ('scheduled', 'starting', 'running', 'ending'), scheduled_for, NULL)) STORED,
  ADD KEY event_runs_due_order (due_since, id),
  DROP KEY event_runs_due
