"""POST /runs/{run_id}/signals/{name}: the game (signing the request) or a person signals a run; the first receipt
of each (run, name) wins, a repeat answers it and changes nothing."""

from __future__ import annotations

from ... import runtime
from ...events import commands
from ...events.lifecycle import SignalEffect
from .. import auth, schemas
from ..operations import Answer, Call, Router
from ..wake import made_work

router = Router(__name__)


@router.operation("POST", "/runs/{run_id}/signals/{name}",
                  "Signal the run: the phase that waits for this signal ends (or, for a later phase, will end as it opens)."
                  " The first receipt of each (run, name) wins; a repeat answers it and changes nothing.",
                  # guard: a-gm-may-signal
                  auth.CONTROLLERS,
                  {202: ("the first receipt: what it did to the run (effect)", schemas.SIGNAL_RESPONSE),
                   200: ("a repeat: the first receipt, unchanged", schemas.SIGNAL_RESPONSE)},
                  body=schemas.SIGNAL_BODY, names={"name": schemas.SIGNAL_NAME}, signed=True,
                  max_body_bytes=schemas.SIGNAL_PAYLOAD_BYTES, waits_for_database=True)
def signal_run(call: Call) -> Answer:
    command = commands.ReceiveSignal(call.ids["run_id"], call.names["name"], call.body or None, by_game=call.signed)
    receipt = commands.execute(runtime.database(), command, commands.Context(call.actor, call.now))
    if receipt.repeat:
        return command.answer(receipt)
    # guard: signal-does-not-nudge-a-sleeping-deployment
    if receipt.signal.effect is SignalEffect.ENDS_PHASE:
        made_work(call)  # the run wakes now: a sleeping deployment is woken for it
    return 202, command.answer(receipt)
