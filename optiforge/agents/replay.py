"""One way to feed stored trials to a :class:`~optiforge.agents.protocols.BlackboxAgent`.

A study, a black-box campaign and the Optuna sampler all hold trials in their own storage;
each one hands them to the agent through :func:`replay_trial`, so a running trial is always a
pending point, a complete one a value (negated when the caller maximises) and a failed one a
failure, whoever stored it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optiforge.agents.protocols import BlackboxAgent

PENDING_STATES = ("running", "waiting")


def replay_trial(agent: BlackboxAgent, params: Mapping[str, Any], state: str,
                 value: float | None, *, maximize: bool = False) -> None:
    """Tell ``agent`` one trial in its current state.

    Parameters
    ----------
    agent : BlackboxAgent
        The agent to update (it minimises).
    params : mapping
        The trial's point.
    state : {"running", "waiting", "complete", "failed"}
        The trial's state; running and waiting trials become pending points.
    value : float or None
        The told value of a complete trial, as the caller stored it.
    maximize : bool
        The caller maximises: the agent is told ``-value``.
    """
    if state in PENDING_STATES:
        agent.add_pending(params)
    elif state == "complete" and value is not None:
        agent.tell(params, -float(value) if maximize else float(value))
    else:
        agent.tell(params, None)
