-- depends: 0052.event-run-resources-exact-ids
-- An acknowledge holds a parked cue for a bounded time, then lapses (docs/contract.md, "Who has a cue").
-- `hold_seconds`: how long an acknowledge (or a take-over) holds the cue, its escalation delay on its run's
-- clock as its park worked it out (NULL: no bound, escalation being off); `held_until`: when the present
-- hold lapses; `lapsed_by`, `lapsed_acknowledged_at`: who had it when a hold last lapsed unanswered, and
-- since when, named by the notices after it (NULL once someone has it again); `holds_ended`: how many holds
-- ended by a release or a lapse, each beginning a new round of reminders and escalation whose notices carry
-- `:h{n}` in their keys (a receiver that de-duplicates drops only true repeats).
ALTER TABLE event_run_steps
  ADD COLUMN hold_seconds DOUBLE NULL,
  ADD COLUMN held_until DATETIME(6) NULL,
  ADD COLUMN lapsed_by VARCHAR(191) NULL,
  ADD COLUMN lapsed_acknowledged_at DATETIME(6) NULL,
  ADD COLUMN holds_ended SMALLINT NOT NULL DEFAULT 0,
  ADD CONSTRAINT event_run_steps_lapsed_with_its_time CHECK ((lapsed_by IS NULL) = (lapsed_acknowledged_at IS NULL))
