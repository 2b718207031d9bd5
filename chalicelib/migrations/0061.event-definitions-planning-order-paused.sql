-- depends: 0060.event-definitions-schedule-paused
-- The planner's reading order (0016) is NULL for a paused schedule as for a definition that does not recur:
-- the planner's one range, "planning_order < until", never reads it, and no statement is added to the tick.
ALTER TABLE event_definitions
  MODIFY COLUMN planning_order DATETIME(6) AS
    (IF(schedule_cron IS NULL OR schedule_paused_at IS NOT NULL, NULL,
        COALESCE(planned_through, '1000-01-01 00:00:00'))) STORED
