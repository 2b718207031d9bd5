-- depends: 0033.event-run-signals
-- What a run waits for (docs/contract.md, "Waiting"), kept on its row by the statements that
-- already move the run, so GET /runs?waiting=… reads one range of an index: `waiting_for` is
-- cue | advance | signal | resume, or NULL while nobody is waited for; `waits` is whether it is
-- set (GET /runs?waiting=any, newest first without a sort). The full `waiting` object is still
-- derived from the rows (chalicelib/events/waiting.py).
ALTER TABLE event_runs
  ADD COLUMN waiting_for VARCHAR(8) NULL,
  ADD COLUMN waits TINYINT(1) GENERATED ALWAYS AS (waiting_for IS NOT NULL) STORED,
  ADD KEY event_runs_waiting (waiting_for, id),
  ADD KEY event_runs_waits (waits, id),
  ADD CONSTRAINT event_runs_waiting_for_known CHECK (waiting_for IS NULL OR waiting_for IN ('cue', 'advance', 'signal', 'resume'))
