-- depends: 0016.event-definitions-planning-order
-- One row per phase of a started run, in the order the runner walks them: the main
-- phases, then the ending (a row only when it has steps). Written by the statements that
-- already move the run: the start inserts every row (phase 1 opened), and the guarded
-- UPDATE that leaves a phase marks it drained and opens the next. `condition` (JSON) is
-- what must be met before a drained phase may be left; none exists yet, so every row
-- has none and a drained phase is left at once.
CREATE TABLE event_run_phases (
  run_id BIGINT UNSIGNED NOT NULL,
  number INT UNSIGNED NOT NULL,
  kind VARCHAR(8) NOT NULL,
  name VARCHAR(200) NOT NULL,
  opened_at DATETIME(6) NULL,
  drained_at DATETIME(6) NULL,
  `condition` LONGTEXT NULL,
  condition_met BOOLEAN NOT NULL DEFAULT FALSE,
  met_at DATETIME(6) NULL,
  met_by VARCHAR(191) NULL,
  PRIMARY KEY (run_id, number),
  CONSTRAINT event_run_phases_kind_known CHECK (kind IN ('main', 'ending', 'cleanup')),
  CONSTRAINT event_run_phases_number_from_one CHECK (number >= 1),
  CONSTRAINT event_run_phases_drained_once_opened CHECK (drained_at IS NULL OR opened_at IS NOT NULL),
  CONSTRAINT event_run_phases_condition_json CHECK (`condition` IS NULL OR JSON_VALID(`condition`))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
