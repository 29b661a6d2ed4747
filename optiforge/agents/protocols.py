"""The small protocols the agents need from the layers around them.

Agents never import :mod:`optiforge.platform`; the orchestrator hands them plain objects
that satisfy these protocols structurally (the platform's LLM backends and executors do).
Every plug-in family of the agent layer is declared here:

* :class:`LLM` — batched text generation (every backend);
* :class:`TrainableLLM` — an LLM whose weights live in this process and can be fine-tuned
  (what a policy-gradient learner needs);
* :class:`TextConstraint` / :class:`ConstrainedLLM` — a language an answer must belong to,
  and an LLM that decodes under one (constrained decoding);
* :class:`PolicyLearner` — the RL learner a campaign steps, saves and restores;
* :class:`ProgramEvaluator` — sandboxed evaluation of generated programs;
* :class:`BlackboxAgent` — an ask/tell optimizer over a :class:`~optiforge.blackbox.Space`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from optiforge.types import Completion, Evaluation


@runtime_checkable
class LLM(Protocol):
    """Batched text generation.

    ``generate(prompts, n=G)`` returns, for each prompt, ``n`` independent samples:
    ``result[i][j]`` is sample ``j`` of prompt ``i``. Prompts are user messages; chat
    backends wrap them in the model's chat template (with ``system`` if given).
    ``temperature == 0`` means greedy decoding (deterministic).
    """

    def generate(
        self,
        prompts: Sequence[str],
        n: int = 1,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.8,
        top_p: float = 1.0,
        seed: int | None = None,
        system: str | None = None,
    ) -> list[list[Completion]]: ...


@runtime_checkable
class TextConstraint(Protocol):
    """A language, read left to right, that an answer must belong to (constrained decoding).

    A backend that decodes under a constraint keeps one state per sequence, starting from
    :meth:`start`. It offers the model only the tokens whose text :meth:`advance` accepts, and it
    may end the answer only where :meth:`accepts` holds. When no token can follow and the
    state accepts, the answer is complete. States must be hashable, because a backend caches
    the allowed tokens per state. A language must not reach a state that neither accepts nor
    continues.
    """

    alphabet: str
    """Every character an accepted answer can contain (backends pre-filter the vocabulary)."""

    def start(self) -> Any:
        """The state before the first character."""
        ...

    def advance(self, state: Any, text: str) -> Any | None:
        """The state after reading ``text`` from ``state``, or ``None`` if ``text`` leaves the language."""
        ...

    def accepts(self, state: Any) -> bool:
        """Whether the text read so far is a complete answer."""
        ...


@runtime_checkable
class ConstrainedLLM(LLM, Protocol):
    """An :class:`LLM` whose ``generate`` also takes ``constraints``: one
    :class:`TextConstraint` (or ``None``) per prompt, which every sample of that prompt obeys."""

    supports_constraints: bool

    def generate(
        self,
        prompts: Sequence[str],
        n: int = 1,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.8,
        top_p: float = 1.0,
        seed: int | None = None,
        system: str | None = None,
        constraints: Sequence[TextConstraint | None] | None = None,
    ) -> list[list[Completion]]: ...


@runtime_checkable
class TrainableLLM(LLM, Protocol):
    """An :class:`LLM` whose weights are in this process, so a learner can fine-tune them.

    ``model`` and ``tokenizer`` are the Hugging Face objects generation uses; a learner that
    injects a LoRA adapter into ``model`` changes what :meth:`generate` samples from at once.
    """

    model: Any
    tokenizer: Any

    def format_prompt(self, prompt: str, system: str | None = None) -> str:
        """The exact text the model is conditioned on for a user ``prompt`` (chat template)."""
        ...

    def prepare_for_training(self) -> Any:
        """Make ``model`` trainable (e.g. undo inference-only weight packing); returns it."""
        ...


@runtime_checkable
class PolicyLearner(Protocol):
    """An RL learner over a :class:`TrainableLLM` (e.g. GRPO), stepped by a campaign.

    ``step`` takes groups ``(formatted prompt, completions, rewards)`` and returns scalar
    statistics; ``save`` writes an adapter version that ``load`` restores exactly (optimizer
    state included); ``drop_optimizer_state`` shrinks an older saved version to what serving
    needs.
    """

    @property
    def step_count(self) -> int: ...

    def step(self, groups: Sequence[tuple[str, Sequence[Any], Sequence[float]]]) -> dict[str, float]: ...

    def save(self, directory: str | os.PathLike[str]) -> Any: ...

    def load(self, directory: str | os.PathLike[str]) -> None: ...

    def drop_optimizer_state(self, directory: str | os.PathLike[str]) -> int: ...


@runtime_checkable
class ProgramEvaluator(Protocol):
    """Evaluates programs for a heuristic task (sandboxed run + trusted scoring).

    ``task`` is the task object; only an evaluator that crosses a process boundary turns it
    into its registry name.
    """

    def evaluate(self, task: Any, programs: Sequence[str], split: str = "train") -> list[Evaluation]: ...


@runtime_checkable
class BlackboxAgent(Protocol):
    """An ask/tell optimizer over a search space; it **minimises**.

    Modelled on Optuna's ``BaseSampler`` and Vizier's designers: the agent holds the trials
    it was told about, suggests points, and saves its state as JSON. Every outside caller
    (a study, a black-box campaign, the Optuna sampler) feeds it trials through
    :func:`optiforge.agents.replay.replay_trial`, so pending, complete and failed trials mean
    the same to every agent.

    Attributes
    ----------
    space : Space
        The search space the agent proposes in.
    """

    space: Any

    def ask(self, n: int) -> list[dict[str, Any]]:
        """Suggest ``n`` points; the agent holds them as pending until told."""
        ...

    def tell(self, params: Mapping[str, Any], value: float | None) -> None:
        """Record an evaluation (``None``: the evaluation failed); resolves a pending point."""
        ...

    def add_pending(self, params: Mapping[str, Any]) -> None:
        """Mark a point as being evaluated elsewhere (e.g. another worker's running trial)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """JSON-able state for an exact resume."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved."""
        ...
