-- depends: 0056.event-run-steps-attempts-allowed-from
-- What overlaps (issue 41): a scheduled run of a definition whose schedule says `overlap: queue_one`, due
-- while an earlier run of it was live, waits behind that run: this names it. A run waiting so starts once
-- the earlier run is over, however late (its grace window no longer applies); NULL for every other run.
ALTER TABLE event_runs
  ADD COLUMN queued_behind BIGINT UNSIGNED NULL
