-- depends: 0048.event-runs-cleaning-up
-- A step whose last attempt has no known outcome (docs/contract.md, "Steps in doubt"): the sweep
-- took its expired lease back, it timed out or lost its connection after its first byte was sent,
-- or a proxy answered for the game (502, 504, a 5xx without a JSON object). Written by the
-- statements that already end an attempt; FALSE for every step that never was.
ALTER TABLE event_run_steps
  ADD COLUMN in_doubt BOOLEAN NOT NULL DEFAULT FALSE
