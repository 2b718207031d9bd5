-- depends: 0010.event-definitions-planning
-- The planner's reading order as one column: NULL for a definition that does not recur
-- (it is never read), the planning mark for one that does, and the earliest date for one
-- never planned (first in line). The planner's read is then one ordered range of this
-- index, "planning_order < until", with no sort: planned_through alone made it two ranges
-- (never planned, or behind) and the optimizer sorted; its index is dropped, unused.
ALTER TABLE event_definitions
  ADD COLUMN planning_order DATETIME(6) AS
    (IF(schedule_cron IS NULL, NULL, COALESCE(planned_through, '1000-01-01 00:00:00'))) STORED,
  ADD KEY event_definitions_planning_order (planning_order),
  DROP KEY event_definitions_planning
