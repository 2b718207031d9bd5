-- depends: 0043.event-definitions-names-distinct
-- One definition per name, case-insensitively (the column's utf8mb4_unicode_ci collation):
-- creating or renaming into a name another definition holds is refused by this key, and the
-- API answers 409 naming the other definition (authoring.py).
-- guard: definition-names-not-unique
ALTER TABLE event_definitions ADD UNIQUE KEY event_definitions_name (name)
