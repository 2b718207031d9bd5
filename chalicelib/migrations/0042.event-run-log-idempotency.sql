-- depends: 0041.event-run-steps-retries
-- A control's Idempotency-Key, kept with its log row and unique per run (compared byte for byte: ascii_bin),
-- and the answer it gave (`{"control", "step_id", "body"}`): a repeat within 24 h answers that answer.
ALTER TABLE event_run_log
  ADD COLUMN idempotency_key VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  ADD COLUMN answer LONGTEXT NULL,
  -- guard: a-key-is-not-unique-per-run
  ADD UNIQUE KEY event_run_log_idempotency (run_id, idempotency_key),
  ADD CONSTRAINT event_run_log_answer_json CHECK (answer IS NULL OR JSON_VALID(answer)),
  ADD CONSTRAINT event_run_log_answer_with_its_key CHECK (answer IS NULL OR idempotency_key IS NOT NULL)
