// @ts-check
// The one way the console names a step, on every surface (buttons, dialogs, banners, the log, notices):
// "Phase 2 · step 4 (world.spawn)", counted from 1 within its phase. A step's database id shows only in its
// details and in addresses.

export function stepName(step) {
  return `Phase ${step.phase} · step ${step.seq + 1} (${step.action_id})`;
}

// The name of the step a log row is about, from the run's steps by id (a row's step is always the run's own;
// one the page has not loaded yet is named by its phase and id).
export function namer(steps) {
  const byId = new Map(steps.map((step) => [step.id, stepName(step)]));
  return (entry) => byId.get(entry.step_id) || `Phase ${entry.phase ?? '?'} · step id ${entry.step_id}`;
}
