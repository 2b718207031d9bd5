-- depends: 0031.event-runs-finished-when-terminal
-- Phases that follow the game (docs/contract.md, "Phases"). A phase row gains its time limit
-- as authored (`limit_seconds`, what happens when it runs out: `on_deadline` close | pause),
-- the deadline the statement that opens the phase writes (opened_at + limit_seconds), and when
-- and why the engine closed it (`closed_at`, `closed_by`: signal | advance | after | timeout): a closed
-- phase's open steps are cancelled and none of its steps is claimed again. `signal` is the
-- name a phase authored `{"when": "signal"}` waits for (the signal route finds its phase by it).
ALTER TABLE event_run_phases
  ADD COLUMN limit_seconds INT UNSIGNED NULL,
  ADD COLUMN on_deadline VARCHAR(8) NULL,
  ADD COLUMN deadline DATETIME(6) NULL,
  ADD COLUMN closed_at DATETIME(6) NULL,
  ADD COLUMN closed_by VARCHAR(8) NULL,
  ADD COLUMN `signal` VARCHAR(64) NULL,
  ADD CONSTRAINT event_run_phases_on_deadline_known CHECK (on_deadline IS NULL OR on_deadline IN ('close', 'pause')),
  ADD CONSTRAINT event_run_phases_limit_has_its_action CHECK ((limit_seconds IS NULL) = (on_deadline IS NULL)),
  ADD CONSTRAINT event_run_phases_closed_by_known CHECK (closed_by IS NULL OR closed_by IN ('signal', 'advance', 'after', 'timeout')),
  ADD CONSTRAINT event_run_phases_closed_with_its_cause CHECK ((closed_at IS NULL) = (closed_by IS NULL))
