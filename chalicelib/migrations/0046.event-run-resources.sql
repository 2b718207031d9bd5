-- depends: 0036.event-run-steps-acknowledged
-- What a run left in the game world (docs/contract.md, "The resource ledger"): one row per thing
-- a step's answer listed (or its static revert), written with the outcome in its transaction.
-- Unique on (run, step, kind, id): an answer read twice records a thing once. `revert` (JSON,
-- {"action", "params"}) is how the cleanup undoes it (none: recorded, never reverted);
-- `status` goes live -> reverting -> reverted | revert_failed. (run_id, id) serves a run's
-- ledger newest first, (status, id) what every run has left.
CREATE TABLE event_run_resources (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  run_id BIGINT UNSIGNED NOT NULL,
  step_id BIGINT UNSIGNED NOT NULL,
  kind VARCHAR(40) NOT NULL,
  resource_id VARCHAR(191) NOT NULL,
  `revert` LONGTEXT NULL,
  status VARCHAR(16) NOT NULL DEFAULT 'live',
  recorded_at DATETIME(6) NOT NULL,
  changed_at DATETIME(6) NOT NULL,
  UNIQUE KEY event_run_resources_once (run_id, step_id, kind, resource_id),
  KEY event_run_resources_of_run (run_id, id),
  KEY event_run_resources_by_status (status, id),
  CONSTRAINT event_run_resources_status_known CHECK (status IN ('live', 'reverting', 'reverted', 'revert_failed')),
  CONSTRAINT event_run_resources_revert_json CHECK (`revert` IS NULL OR JSON_VALID(`revert`))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
