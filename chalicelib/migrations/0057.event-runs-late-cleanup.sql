-- depends: 0056.event-run-steps-attempts-allowed-from
-- The cleanup of a finished run (a person's Clean up, docs/contract.md "Cleaning up a finished run"): the run
-- keeps its final status, and this says how its cleanup stands: started (the tick reverts what it left),
-- done (every revert was done) or failed (some could not be reverted: what is left is in the ledger).
-- NULL: nobody asked for one since it finished. `late_cleanup_at`: when it was last asked for (what its
-- reverts failed since then is what it left).
ALTER TABLE event_runs
  ADD COLUMN late_cleanup VARCHAR(16) NULL,
  ADD COLUMN late_cleanup_at DATETIME(6) NULL,
  ADD CONSTRAINT event_runs_late_cleanup_known CHECK (late_cleanup IS NULL OR late_cleanup IN ('started', 'done', 'failed'))
