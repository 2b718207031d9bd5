-- depends: 0006.event-runs-due-order
-- The planner's columns. schedule_timezone mirrors the current version's schedule, as
-- schedule_cron does. planned_through: every occurrence of the current version at or
-- before it has been planned or counted as skipped, so a tick looks only at what is new
-- (a new version clears it). The planner takes definitions most-behind first, in this
-- index's order, so one it had no time for is first in line at the next tick.
ALTER TABLE event_definitions
  ADD COLUMN schedule_timezone VARCHAR(64) NULL AFTER schedule_cron,
  ADD COLUMN planned_through DATETIME(6) NULL,
  ADD KEY event_definitions_planning (planned_through)
