"""A run written as a chat conversation, for the chat formats of ``domain.datasets``
(``docs/datasets.md``, "The chat texts").

A challenge and its answer are shown without the nonce and the hash to echo: they are
random per run, nothing a model can learn, and they would make two runs' prompts differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .challenge import ISSUED
from .jsontext import compact
from .run_data import ProtocolData, RunData, StepData


def shown(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: v for k, v in value.items() if k not in ISSUED}
    return value


def step_of(protocol: ProtocolData, index: int) -> StepData | None:
    return protocol.steps[index] if 0 <= index < len(protocol.steps) else None


def _challenge(run: RunData, index: int) -> Mapping[str, Any] | None:
    """The challenge of a step as it was issued to this run, else as declared."""
    proof = run.accepted.get(index)
    if proof is not None and isinstance(proof.get("challenge"), Mapping):
        return proof["challenge"]
    step = step_of(run.protocol, index)
    return step.challenge if step else None


def step_text(run: RunData, index: int) -> str:
    """A user turn: the step, what it asks, and its challenge (without nonce or hash)."""
    step = step_of(run.protocol, index)
    total = len(run.protocol.steps)
    head = f"Step {index + 1} of {total}" + (f": {step.label}" if step and step.label else "")
    parts = [head]
    if step and step.content.strip():
        parts.append(step.content.strip())
    challenge = _challenge(run, index)
    if challenge is not None:
        parts.append("Challenge: " + compact(shown(challenge)))
    return "\n\n".join(parts)


def system_text(protocol: ProtocolData) -> str:
    return (f"You are running the protocol \u201c{protocol.title}\u201d, step by step. Each "
            "step ends with a challenge; answer it with the solution object, as JSON.")


def request_text(run: RunData) -> str:
    return run.request or f"Run the protocol \u201c{run.protocol.title}\u201d."


def answer_text(solution: Any) -> str:
    """An assistant turn: the solution as the agent submitted it, compact."""
    return compact(shown(solution))


def turns(run: RunData, upto: int) -> list[dict[str, str]]:
    """system, then the request with step 1, then each accepted answer and the next step,
    through the user turn of step ``upto``: roles alternate as chat templates require."""
    answers = run.accepted
    messages = [{"role": "system", "content": system_text(run.protocol)},
                {"role": "user", "content": request_text(run) + "\n\n" + step_text(run, 0)}]
    for index in range(upto):
        messages.append({"role": "assistant", "content": answer_text(answers[index]["solution"])})
        messages.append({"role": "user", "content": step_text(run, index + 1)})
    return messages


__all__ = ["answer_text", "compact", "request_text", "shown", "step_of", "step_text",
           "system_text", "turns"]
