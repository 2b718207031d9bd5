-- depends: 0006.event-runs-due-order
-- A run's wake time: the earliest moment the tick has to look at it (NULL: only a
-- person can move it, or it is over). find_due reads one range of event_runs_wake,
-- in wake order, and so never visits a run parked at a cue or holding behind a long
-- wait. It replaces due_since, which made every live run due on every tick.
ALTER TABLE event_runs
  ADD COLUMN wake_at DATETIME(6) NULL,
  ADD KEY event_runs_wake (wake_at, id),
  DROP KEY event_runs_due_order,
  DROP COLUMN due_since
