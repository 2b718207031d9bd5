-- depends: 0046.event-run-resources
-- A cleanup's revert step names the resource it reverts in a column of its own (never in
-- params, which go to the game unchanged); NULL for every other step.
ALTER TABLE event_run_steps
  ADD COLUMN resource_id BIGINT UNSIGNED NULL,
  ADD UNIQUE KEY event_run_steps_reverting (resource_id)
