-- depends: 0077.event-run-steps-name
-- Reads that grow with a window, never with a year of history: the calendar's runs of a definition in a
-- window, earliest first (`runs.live_between`: one range of (definition_id, mode, scheduled_for), no sort);
-- a bulk press's `scheduled_between` window (one range of (scheduled_for, id), where it read every run);
-- the runs list by definition and status, newest first (one range of (definition_id, status, id), where
-- it intersected two keys and sorted).
ALTER TABLE event_runs
  ADD KEY event_runs_definition_time (definition_id, mode, scheduled_for, id),
  ADD KEY event_runs_scheduled (scheduled_for, id),
  ADD KEY event_runs_definition_status (definition_id, status, id)
