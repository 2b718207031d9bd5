// @ts-check
// A refusal the definitions and calendar pages do not handle themselves, said in a notice: who may do it
// (403) or the server's own words (or the page's, for a fault of its own). A 401 says nothing here: sign-in takes
// over (api.js).

import { asApiError, neededRoles } from './api.js';
import { notice } from './ui.js';

export function explain(caught, what) {
  const error = asApiError(caught);
  if (error.status === 401) return;
  if (error.status === 403) {
    notice(`Not allowed: ${what} needs the role ${neededRoles(error).join(' or ') || 'admin'}.`, 'error');
  } else {
    notice(`${what} did not work: ${error.messages.join(' ')}`, 'error');
  }
}
