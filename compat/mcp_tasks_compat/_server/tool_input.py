"""Input asked from inside a tool body (elicitation, sampling, roots), on wire JSON, SDK-free.

Where a question goes depends on what the call is at that moment, the same rule on both majors:
in a task it is relayed through the task (``input_required``; answered by ``tasks/update`` in
2026-07-28, on the client's open ``tasks/result`` in 2025-11-25); in a plain call it is the
ordinary request of the current ``tools/call`` (the adapter's ``plain``); in a 2026-07-28 call
still inside its inline grace, ``before_task`` asks as a multi-round-trip round (the call is
answered ``input_required`` and the tool runs again with the answer) and any other question makes
the call a task now. A 2025-11-25 session that told the server it cannot answer a kind of
question has its task cancelled at once, saying why, rather than left ``input_required``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.lowlevel

from .. import _engine
from ..dialects import DIALECT_2025_11_25
from ..errors import TaskStateError
from .handoff import in_handoff
from .rounds_2026 import call_rounds

__all__ = ["PlainInput", "UndeclaredCapability", "ask"]

PlainInput = Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
"""The adapter's ordinary server-to-client request on the current ``tools/call``: its answer."""

UndeclaredCapability = Callable[[str], "str | None"]
"""The adapter's reading of the task's session: the capability ``method`` needs and it lacks."""


async def ask(
    method: str,
    params: dict[str, Any],
    *,
    before_task: bool,
    plain: PlainInput,
    undeclared: UndeclaredCapability,
) -> Mapping[str, Any]:
    """One input request from the tool body running here; the client's answer as wire JSON."""
    run = _engine.current_run()
    if run is None:
        call = _engine.pending_call()
        rounds = call_rounds() if before_task else None
        if call is None:
            if rounds is not None:  # a plain 2026-07-28 call: the question is a round all the same
                return rounds.ask(method, params)
            return await plain(method, params)
        if rounds is not None and call.is_open:  # still undecided: a round, before any task
            return rounds.ask(method, params)
        await call.task()
        run = _engine.current_run()
        assert run is not None
    engine, record = run
    if record.dialect == DIALECT_2025_11_25 and not in_handoff():  # a hand-off's: task_answer answers
        missing = undeclared(method)
        if missing is not None:
            # The session told the server in initialize that it cannot answer this: end the task
            # now, as a 2026-07-28 client would, rather than leave it input_required until its TTL.
            reason = (
                f"the client cannot answer {method}: it did not declare the {missing!r} capability "
                "(it has no callback for it)"
            )
            with anyio.CancelScope(shield=True):  # the cancel stops this very work: finish it first
                await engine.writer.cancel(record, strict=False, reason=reason)
            await anyio.lowlevel.checkpoint()  # the run's cancel scope ends the work here
            raise TaskStateError(f"task {record.task.task_id} was cancelled: {reason}")
    request: dict[str, Any] = {"method": method}
    if params:
        request["params"] = params
    return await engine.inputs.request(record, request)
