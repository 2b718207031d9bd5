-- depends: 0042.event-run-log-idempotency
-- Definition names become unique, compared as the column's collation compares them (case and
-- accents aside; 0044 adds the key). A database may already hold definitions that share a name:
-- the oldest of each keeps it, and every later one is renamed "<name> (definition <id>)" (the
-- name cut to 160 characters first, so it fits), so the key can be added and nothing is lost.
-- A rename changes only the definition's row: its versions' documents are kept as stored, and
-- the next version saved under the old name is refused with 409 naming the one that holds it.
UPDATE event_definitions d
  JOIN (SELECT later.id
          FROM event_definitions later
          JOIN event_definitions earlier ON earlier.name = later.name AND earlier.id < later.id
         GROUP BY later.id) duplicate ON duplicate.id = d.id
   SET d.name = CONCAT(LEFT(d.name, 160), ' (definition ', d.id, ')')
