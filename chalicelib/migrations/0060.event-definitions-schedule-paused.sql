-- depends: 0056.event-run-steps-attempts-allowed-from
-- A recurring definition's schedule paused by a person (POST /definitions/{id}/schedule/pause): when, by
-- whom and why, all NULL while it runs. The planner's reading order (0061) leaves a paused definition out,
-- so while paused no occurrence of it is planned and the sleep's look-ahead never waits for one.
ALTER TABLE event_definitions
  ADD COLUMN schedule_paused_at DATETIME(6) NULL,
  ADD COLUMN schedule_paused_by VARCHAR(191) NULL,
  ADD COLUMN schedule_paused_reason VARCHAR(500) NULL
