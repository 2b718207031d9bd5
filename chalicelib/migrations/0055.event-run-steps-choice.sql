-- depends: 0054.event-run-steps-hold
-- A cue with choices (docs/definitions.md, "Cues that ask"): the value its confirm chose, or its timeout's
-- `timeout_choice`, written by the statement that finishes the cue; NULL for every other step and for a cue
-- skipped, cancelled or asked before choices existed. As long as a choice's value may be (100 characters).
ALTER TABLE event_run_steps
  ADD COLUMN choice VARCHAR(100) NULL
