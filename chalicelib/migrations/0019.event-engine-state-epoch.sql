-- depends: 0009.event-engine-state
-- The engine state's compare-and-set token and the name of its standing wake-ups.
-- `epoch` goes up by one with every change of the row, so a tick that read the row,
-- then called AWS, moves it only if nobody moved it meanwhile (a sleeping tick and a
-- woken one can no longer both win). `wake_ups` is the epoch of the sleep whose
-- one-time wake-up and backstop schedules stand (they are named after it), so a tick
-- that wakes deletes that sleep's schedules and never a later sleep's.
ALTER TABLE event_engine_state
  ADD COLUMN epoch BIGINT UNSIGNED NOT NULL DEFAULT 0,
  ADD COLUMN wake_ups BIGINT UNSIGNED NULL
