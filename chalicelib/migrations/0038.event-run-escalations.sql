-- depends: 0037.event-run-steps-attention
-- A run that has waited for a person for EVENT_ESCALATE_AFTER_SECONDS (paused, or held at a manual
-- phase) is escalated once per wait: one row per wait, keyed by the moment that wait began (`since`).
-- Its INSERT is the claim (the primary key refuses a second); `n` numbers the run's escalations, for the
-- notice's idempotency key ({run id}:stall:{n}). Until `sent_at`, `retry_at` is when the next try is due.
CREATE TABLE event_run_escalations (
  run_id BIGINT UNSIGNED NOT NULL,
  since DATETIME(6) NOT NULL,
  n SMALLINT NOT NULL,
  waiting_for VARCHAR(16) NOT NULL,
  tries SMALLINT NOT NULL DEFAULT 1,
  retry_at DATETIME(6) NULL,
  sent_at DATETIME(6) NULL,
  PRIMARY KEY (run_id, since),
  KEY event_run_escalations_retry (retry_at),
  CONSTRAINT event_run_escalations_waiting_known CHECK (waiting_for IN ('resume', 'advance'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
