-- Events as authored. The document of each version lives in event_definition_versions;
-- schedule_cron mirrors the current version's schedule so the planner scans one small table.
CREATE TABLE event_definitions (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(200) NOT NULL,
  current_version INT UNSIGNED NOT NULL,
  schedule_cron VARCHAR(120) NULL,
  created_by VARCHAR(191) NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  KEY event_definitions_scheduled (schedule_cron)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
