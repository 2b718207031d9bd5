-- depends: 0001.event-definitions
-- Immutable: a run points at the version it was planned from.
CREATE TABLE event_definition_versions (
  definition_id BIGINT UNSIGNED NOT NULL,
  version INT UNSIGNED NOT NULL,
  document LONGTEXT NOT NULL,
  created_by VARCHAR(191) NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (definition_id, version),
  CONSTRAINT event_definition_versions_document_json CHECK (JSON_VALID(document)),
  CONSTRAINT event_definition_versions_definition
    FOREIGN KEY (definition_id) REFERENCES event_definitions (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
