-- depends: 0040.event-runs-version
-- How many times a person retried the step (the retry control raises it, in the requeue's own statement).
-- A step's ETag is its retries, attempts, state and finished_at: attempts only rise except across a retry,
-- which raises this, so a step retried and back at the same status never repeats an earlier tag.
ALTER TABLE event_run_steps
  ADD COLUMN retries INT UNSIGNED NOT NULL DEFAULT 0
