-- depends: 0044.event-definitions-name-unique
-- Occurrences of a recurring definition a person marked not to be run (POST
-- /definitions/{id}/occurrences/{scheduled_for}/skip). The planner's INSERT of a run is
-- guarded on no row here for its occurrence, and skipping cancels a run already scheduled
-- for it in the same transaction; unskipping deletes the row before the occurrence is due.
CREATE TABLE event_occurrence_skips (
  definition_id BIGINT UNSIGNED NOT NULL,
  scheduled_for DATETIME(6) NOT NULL,
  reason VARCHAR(500) NULL,
  skipped_by VARCHAR(191) NOT NULL,
  skipped_at DATETIME(6) NOT NULL,
  PRIMARY KEY (definition_id, scheduled_for),
  CONSTRAINT event_occurrence_skips_definition FOREIGN KEY (definition_id) REFERENCES event_definitions (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
