-- depends: 0051.event-runs-rehearsal
-- A resource's kind and id are the game's, compared as bytes: under utf8mb4_unicode_ci the unique key
-- (run, step, kind, id) merged `aB3`/`Ab3`, `é1`/`e1`, `ß`/`ss` and, PAD SPACE, `x`/`x ` (INSERT IGNORE
-- dropped the second), so cleanup left distinct things in the world. VARBINARY, not a collation: the two
-- databases the engine runs on share no NO PAD binary collation (MariaDB has utf8mb4_nopad_bin, Aurora
-- MySQL 8 utf8mb4_0900_bin), and utf8mb4_bin pads. Widths in bytes: 40 and 191 characters of UTF-8 at 4
-- bytes each. Rows merged before this cannot be split after the fact: the second thing was never stored
-- (docs/operations.md, "Resources merged before migration 0052").
ALTER TABLE event_run_resources
  MODIFY kind VARBINARY(160) NOT NULL,
  MODIFY resource_id VARBINARY(764) NOT NULL
