-- depends: 0055.event-run-steps-choice
-- Attempts only rise (issue 39): a person's retry or resend no longer sets `attempts` back to 0, which
-- sent the game an attempt number it had already fenced off (the status endpoint's attempt fence), so a
-- retry after a probe was refused and dead-ended the step. The retry and the resend write this instead,
-- the attempts counted so far: the attempt ceiling counts `attempts - attempts_allowed_from`, a fresh
-- allowance, while the attempt the game sees goes on rising (docs/contract.md, "Statuses and transitions").
ALTER TABLE event_run_steps
  ADD COLUMN attempts_allowed_from INT UNSIGNED NOT NULL DEFAULT 0
