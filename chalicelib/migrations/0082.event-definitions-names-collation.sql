-- depends: 0081.event-definitions-names-by-their-characters
-- Definition names compared as they render, case and accents aside as before: utf8mb4_unicode_520_ci
-- weighs each character beyond U+FFFF on its own, where utf8mb4_unicode_ci weighs them all alike
-- (a new definition "Halloween night 🎄" was refused as the name of "Halloween night 🎃"). The key
-- `event_definitions_name` is rebuilt with the column (a small table: one row a definition).
ALTER TABLE event_definitions MODIFY name VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci NOT NULL
