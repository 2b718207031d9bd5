-- depends: 0056.event-run-steps-attempts-allowed-from
-- One name for a step on every surface (issue 40): a step's authored `name` (what an only_if calls it by) is
-- kept on its row, so every surface names it from the row alone: "Run 6 · Phase 1 · step 2 (light the
-- bonfire)" (docs/contract.md, "A step's one name"). NULL: the step was authored without one, or is a revert.
ALTER TABLE event_run_steps
  ADD COLUMN name VARCHAR(64) NULL
