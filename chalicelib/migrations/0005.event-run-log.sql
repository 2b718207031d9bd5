-- depends: 0004.event-run-steps
-- The shared record: every change of state, by the tick or by a person.
CREATE TABLE event_run_log (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  run_id BIGINT UNSIGNED NOT NULL,
  step_id BIGINT UNSIGNED NULL,
  kind VARCHAR(40) NOT NULL,
  phase INT UNSIGNED NULL,
  detail LONGTEXT NULL,
  actor VARCHAR(191) NULL,
  created_at DATETIME(6) NOT NULL,
  KEY event_run_log_run (run_id, id),
  CONSTRAINT event_run_log_detail_json CHECK (detail IS NULL OR JSON_VALID(detail))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
