-- depends: 0050.event-run-steps-on-doubt
-- A run's mode: `live`, or `rehearsal` (a dry run, POST /definitions/{id}/dry-runs) with what the
-- tick reads from its row to drive it: its speed (authored waits, `after` phases, timeouts,
-- reminder and escalation intervals divided by it), its bridge (simulate or sandbox), when the
-- engine confirms a cue nobody confirmed and sends a signal phase's signal (rehearsal seconds).
-- A live run has speed 1 and none of the rest. GET /runs?rehearsal=only|exclude reads one range of
-- (mode, id), newest first without a sort.
ALTER TABLE event_runs
  ADD COLUMN mode VARCHAR(16) NOT NULL DEFAULT 'live',
  ADD COLUMN speed SMALLINT UNSIGNED NOT NULL DEFAULT 1,
  ADD COLUMN rehearsal_bridge VARCHAR(8) NULL,
  ADD COLUMN auto_confirm_seconds INT UNSIGNED NULL,
  ADD COLUMN auto_signal_seconds INT UNSIGNED NULL,
  ADD KEY event_runs_mode (mode, id),
  ADD CONSTRAINT event_runs_mode_known CHECK (mode IN ('live', 'rehearsal')),
  ADD CONSTRAINT event_runs_speed_range CHECK (speed BETWEEN 1 AND 600 AND (mode = 'rehearsal' OR speed = 1)),
  ADD CONSTRAINT event_runs_rehearsal_bridge CHECK (rehearsal_bridge IS NULL OR rehearsal_bridge IN ('simulate', 'sandbox')),
  ADD CONSTRAINT event_runs_rehearsal_settings CHECK ((mode = 'rehearsal') = (rehearsal_bridge IS NOT NULL)
                                                      AND (mode = 'rehearsal') = (auto_confirm_seconds IS NOT NULL)
                                                      AND (mode = 'rehearsal' OR auto_signal_seconds IS NULL))
