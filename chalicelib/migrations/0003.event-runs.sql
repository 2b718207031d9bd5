-- depends: 0002.event-definition-versions
-- One occurrence of a definition version. occurrence_key makes planning idempotent;
-- event_runs_due serves find_due, event_runs_listing the console's newest-first pages.
CREATE TABLE event_runs (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  definition_id BIGINT UNSIGNED NOT NULL,
  definition_version INT UNSIGNED NOT NULL,
  occurrence_key VARCHAR(191) NOT NULL,
  status VARCHAR(16) NOT NULL DEFAULT 'scheduled',
  scheduled_for DATETIME(6) NOT NULL,
  grace_seconds INT UNSIGNED NOT NULL,
  current_phase INT UNSIGNED NULL,
  health VARCHAR(16) NOT NULL DEFAULT 'ok',
  last_error VARCHAR(1000) NULL,
  claimed_by VARCHAR(64) NULL,
  claim_expires_at DATETIME(6) NULL,
  started_at DATETIME(6) NULL,
  finished_at DATETIME(6) NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY event_runs_occurrence (occurrence_key),
  KEY event_runs_due (status, scheduled_for),
  KEY event_runs_listing (status, id),
  KEY event_runs_definition (definition_id, id),
  CONSTRAINT event_runs_status_known CHECK (status IN
    ('scheduled','starting','running','paused','ending','completed','cancelled','failed','missed')),
  CONSTRAINT event_runs_health_known CHECK (health IN ('ok','degraded')),
  CONSTRAINT event_runs_version
    FOREIGN KEY (definition_id, definition_version)
    REFERENCES event_definition_versions (definition_id, version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
