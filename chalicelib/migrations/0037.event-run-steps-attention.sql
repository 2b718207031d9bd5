-- depends: 0036.event-run-steps-acknowledged
-- A parked cue's attention timers (core.cue's remind_after_seconds, escalate_after_seconds and
-- timeout_seconds; EVENT_ESCALATE_AFTER_SECONDS for a cue without its own escalation), written by the
-- statement that parks it. Each is the moment its timer is next due, NULL when it has nothing left; the
-- run's wake time reads the earliest of the three for a parked head step. Each is claimed by a
-- compare-and-set on the value the tick read (runner/attention.py).
ALTER TABLE event_run_steps
  ADD COLUMN remind_at DATETIME(6) NULL,
  ADD COLUMN reminders_sent SMALLINT NOT NULL DEFAULT 0,
  ADD COLUMN escalate_at DATETIME(6) NULL,
  ADD COLUMN escalation_tries SMALLINT NOT NULL DEFAULT 0,
  ADD COLUMN times_out_at DATETIME(6) NULL
