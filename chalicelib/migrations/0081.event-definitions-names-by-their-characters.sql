-- depends: 0080.event-chat-messages-press-edits
-- Before 0082 compares definition names by every character (utf8mb4_unicode_520_ci): a name that
-- collation takes for an earlier definition's is renamed as 0043 renames one, "<name> (definition <id>)",
-- so the unique key's rebuild cannot fail. None is expected (the new collation tells apart what the old
-- one did, and characters beyond U+FFFF too); this is the guarantee, not a clean-up.
UPDATE event_definitions d
  JOIN (SELECT later.id
          FROM event_definitions later
          JOIN event_definitions earlier
            ON earlier.name COLLATE utf8mb4_unicode_520_ci = later.name COLLATE utf8mb4_unicode_520_ci
           AND earlier.id < later.id
         GROUP BY later.id) duplicate ON duplicate.id = d.id
   SET d.name = CONCAT(LEFT(d.name, 160), ' (definition ', d.id, ')')
