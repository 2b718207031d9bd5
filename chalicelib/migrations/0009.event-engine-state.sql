-- depends: 0008.event-runs-wake-backfill
-- Whether the deployment is awake (its minute rule on, a tick invocation running or due)
-- or asleep (rule off, at most a one-time wake-up scheduled). One row, moved only by
-- compare-and-set: the tick moves it to asleep, anything that creates work back to
-- waking, and the tick that starts to awake. Created with its row, in one statement.
CREATE TABLE event_engine_state (
  id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
  state VARCHAR(8) NOT NULL,
  changed_at DATETIME(6) NOT NULL,
  sleeps_until DATETIME(6) NULL,
  CONSTRAINT event_engine_state_one_row CHECK (id = 1),
  CONSTRAINT event_engine_state_known CHECK (state IN ('awake', 'asleep', 'waking'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
  SELECT 1 AS id, 'awake' AS state, UTC_TIMESTAMP(6) AS changed_at, NULL AS sleeps_until
