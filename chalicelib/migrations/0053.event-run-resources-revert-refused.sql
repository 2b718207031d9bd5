-- depends: 0052.event-run-resources-exact-ids
-- Why a resource's revert is never sent (docs/contract.md, "The resource ledger"): the game listed it with a
-- module action the bridge does not declare (EVENT_MODULE_ACTIONS), "cannot revert: undeclared action x".
-- The resource is kept live (the world has it) and a cleanup leaves it, saying why; NULL: a cleanup sends it.
ALTER TABLE event_run_resources ADD COLUMN revert_refused VARCHAR(255) NULL AFTER `revert`
