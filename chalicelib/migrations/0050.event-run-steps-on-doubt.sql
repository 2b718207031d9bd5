-- depends: 0049.event-run-steps-in-doubt
-- What a step in doubt does (its definition's `on_doubt`: resend, the default, or park for a person's
-- decision), why a parked step waits (`park_reason`: a cue, or a decision on a step in doubt; the parked
-- steps before it are cues), and the run's new wait, `decision` (docs/contract.md, "Steps in doubt").
ALTER TABLE event_run_steps
  ADD COLUMN on_doubt VARCHAR(8) NOT NULL DEFAULT 'resend',
  ADD COLUMN park_reason VARCHAR(8) NULL,
  ADD CONSTRAINT event_run_steps_on_doubt_known CHECK (on_doubt IN ('resend', 'park')),
  ADD CONSTRAINT event_run_steps_park_reason_known CHECK (park_reason IS NULL OR park_reason IN ('cue', 'doubt'));

UPDATE event_run_steps SET park_reason = 'cue' WHERE status = 'running' AND claim_expires_at IS NULL;

ALTER TABLE event_runs
  DROP CONSTRAINT event_runs_waiting_for_known,
  ADD CONSTRAINT event_runs_waiting_for_of_waits CHECK (waiting_for IS NULL OR waiting_for IN ('cue', 'advance', 'signal', 'decision', 'resume'))
