// @ts-check
// The one way the console names a step, on every surface (banners, dialogs, the steps, the log, the ledger,
// notices): the server's `named` ("Run 6 · Phase 1 · step 2 (light the bonfire)", docs/contract.md "A step's
// one name"), never worked out here, so a chat message, the terminal and the page say the same words and a
// name read elsewhere is found on the page. A step's database id shows only in its details and in addresses.

export function stepName(step) {
  return step.named;
}

// A step's authored words (a cue's instruction, an announcement's message) unless its name already carries
// them whole, so "Light the bonfire" is not said twice; null for none.
export function wordsBeyondName(step) {
  const words = step.params?.instruction || step.params?.message;
  return words && !stepName(step).endsWith(`(${words})`) ? words : null;
}

// The name of the step a row (a log row, a resource) is about, from the run's steps by id (a row's step is
// always the run's own; one the page has not loaded yet is named by its run, phase and id).
export function namer(steps) {
  const byId = new Map(steps.map((step) => [step.id, stepName(step)]));
  return (row) => byId.get(row.step_id) || `Run ${row.run_id} · Phase ${row.phase ?? '?'} · step id ${row.step_id}`;
}
