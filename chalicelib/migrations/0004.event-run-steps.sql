-- depends: 0003.event-runs
-- One action of one phase of one run. (run_id, phase, seq) makes materialising
-- idempotent and serves next_open_step; event_run_steps_lease serves reclaim_stale.
CREATE TABLE event_run_steps (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  run_id BIGINT UNSIGNED NOT NULL,
  phase INT UNSIGNED NOT NULL,
  seq INT UNSIGNED NOT NULL,
  action_id VARCHAR(100) NOT NULL,
  params LONGTEXT NOT NULL,
  action_version INT UNSIGNED NOT NULL DEFAULT 1,
  on_failure VARCHAR(16) NOT NULL DEFAULT 'pause',
  idempotency_key VARCHAR(40) NOT NULL DEFAULT '',
  status VARCHAR(16) NOT NULL DEFAULT 'pending',
  attempts INT UNSIGNED NOT NULL DEFAULT 0,
  claimed_by VARCHAR(64) NULL,
  claim_expires_at DATETIME(6) NULL,
  due_at DATETIME(6) NULL,
  started_at DATETIME(6) NULL,
  finished_at DATETIME(6) NULL,
  last_error VARCHAR(1000) NULL,
  UNIQUE KEY event_run_steps_position (run_id, phase, seq),
  KEY event_run_steps_lease (status, claim_expires_at),
  CONSTRAINT event_run_steps_params_json CHECK (JSON_VALID(params)),
  CONSTRAINT event_run_steps_status_known CHECK (status IN
    ('pending','running','done','failed','refused','skipped','cancelled')),
  CONSTRAINT event_run_steps_on_failure_known CHECK (on_failure IN ('pause','skip','abort_run'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
