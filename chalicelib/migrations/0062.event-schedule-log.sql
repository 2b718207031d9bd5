-- depends: 0061.event-definitions-planning-order-paused
-- A recurring definition's schedule log: each pause and resume a person made, with its reason (and a
-- resume's catch-up), written in the transaction of the change (kinds: events/journal.py, SCHEDULE_KINDS).
CREATE TABLE event_schedule_log (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  definition_id BIGINT UNSIGNED NOT NULL,
  kind VARCHAR(40) NOT NULL,
  actor VARCHAR(191) NOT NULL,
  detail JSON NOT NULL,
  created_at DATETIME(6) NOT NULL,
  KEY event_schedule_log_definition (definition_id, id),
  CONSTRAINT event_schedule_log_definition FOREIGN KEY (definition_id) REFERENCES event_definitions (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
