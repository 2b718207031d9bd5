-- depends: 0032.event-run-phases-timers
-- The first receipt of each (run, signal name) (POST /runs/{id}/signals/{name}): who sent it,
-- when, what it did, and its payload. A signal received before its phase opens is folded into
-- the statement that opens the phase (its condition is met from the start).
CREATE TABLE event_run_signals (
  run_id BIGINT UNSIGNED NOT NULL,
  name VARCHAR(64) NOT NULL,
  received_at DATETIME(6) NOT NULL,
  received_by VARCHAR(191) NOT NULL,
  effect VARCHAR(16) NOT NULL,
  payload LONGTEXT NULL,
  PRIMARY KEY (run_id, name),
  CONSTRAINT event_run_signals_effect_known CHECK (effect IN ('ends_phase', 'kept_for_phase', 'phase_over', 'acts_on_resume')),
  CONSTRAINT event_run_signals_payload_json CHECK (payload IS NULL OR JSON_VALID(payload))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
