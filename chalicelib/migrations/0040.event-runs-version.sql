-- depends: 0036.event-run-steps-acknowledged
-- The run's control state, counted (issue 27): raised by the statement that makes each run-level change
-- (a status change, the tick's included, and a person's advance), never by a phase change, a lease, a wake
-- time, health or last_error alone. GET /runs/{id} answers it as ETag "r{id}.{version}", and a run control
-- given that tag in If-Match holds its guarded UPDATE to it (`AND version = %s`).
ALTER TABLE event_runs
  ADD COLUMN version BIGINT UNSIGNED NOT NULL DEFAULT 1
