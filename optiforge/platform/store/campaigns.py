"""Campaigns and their rounds: candidates, evaluations, LLM calls, agent states."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from optiforge import validation as v
from optiforge.platform.store.base import StoreBase, new_id, page
from optiforge.platform.store.errors import ConflictError, NotFoundError
from optiforge.platform.store.models import (
    AgentStateRow,
    CampaignRow,
    CandidateRow,
    EvaluationRow,
    LLMCallRow,
    RoundRow,
    utcnow,
)
from optiforge.platform.store.records import (
    CAMPAIGN_STATUSES,
    Campaign,
    Candidate,
    CandidateIn,
    CandidateOutline,
    EvaluationRecord,
    LLMCall,
    LLMCallIn,
)
from optiforge.platform.store.runners import check_free, runner_state, this_process

_ENDED = ("finished", "failed")
CANDIDATE_ORDERS = ("number", "-number", "score", "-score")
"""How :meth:`CampaignsMixin.candidates` may sort (``-`` = descending; no score sorts last)."""
DEFAULT_OWNER = "local"
"""Owner of the campaigns the command line starts (the operator's, like its studies)."""


def _campaign(r: CampaignRow) -> Campaign:
    status = r.status
    if status == "running" and runner_state(r.runner) == "gone":
        status = "interrupted"  # killed before it could say so
    return Campaign(
        id=r.id, owner=r.owner, name=r.name, task=r.task, agent=r.agent, llm=r.llm, budget=r.budget,
        seed=r.seed, executor=r.executor, config=r.config, status=status,
        created_at=r.created_at, updated_at=r.updated_at, finished_at=r.finished_at,
        runner=r.runner,
    )


def _evaluation(e: EvaluationRow) -> EvaluationRecord:
    return EvaluationRecord(
        id=e.id, campaign_id=e.campaign_id, candidate_hash=e.candidate_hash, split=e.split,
        valid=e.valid, score=e.score, metrics=e.metrics, error=e.error, runtime_s=e.runtime_s,
        created_at=e.created_at,
    )


def _candidate(c: CandidateRow, e: EvaluationRow, call_index: int | None, number: int) -> Candidate:
    return Candidate(
        id=c.id, campaign_id=c.campaign_id, number=number, round=c.round, hash=c.hash, operator=c.operator,
        code=c.code, idea=c.idea, parents=tuple(c.parents), split=e.split, valid=e.valid,
        score=e.score, metrics=e.metrics, error=e.error, runtime_s=e.runtime_s, reward=c.reward,
        llm_call_index=call_index, llm_call_id=c.llm_call_id, evaluation_id=e.id,
        created_at=c.created_at,
    )


def _llm_call(c: LLMCallRow) -> LLMCall:
    return LLMCall(
        id=c.id, campaign_id=c.campaign_id, round=c.round, index=c.call_index, prompt=c.prompt,
        response=c.response, prompt_tokens=c.prompt_tokens,
        completion_tokens=c.completion_tokens, model=c.model, operator=c.operator,
        reward=c.reward, created_at=c.created_at,
    )


def _evaluation_fields(valid: Any, score: Any, metrics: Any, error: Any, runtime_s: Any,
                       name: str) -> dict[str, Any]:
    valid = v.boolean(valid, f"{name}valid")
    score = v.real(score, f"{name}score", optional=True)
    if valid and score is None:
        raise ValueError(f"{name}score: a valid evaluation needs a finite score")
    return {
        "valid": valid,
        "score": score,
        "metrics": v.json_dict(metrics, f"{name}metrics", optional=True),
        "error": v.text(error, f"{name}error", optional=True, max_len=None, empty=True),
        "runtime_s": v.real(runtime_s, f"{name}runtime_s", minimum=0.0),
    }


def _check_call(c: Any, name: str) -> dict[str, Any]:
    if not isinstance(c, LLMCallIn):
        raise TypeError(f"{name}: expected LLMCallIn, got {type(c).__name__}")
    return {
        "prompt": v.text(c.prompt, f"{name}.prompt", max_len=None, empty=True),
        "response": v.text(c.response, f"{name}.response", max_len=None, empty=True),
        "prompt_tokens": v.integer(c.prompt_tokens, f"{name}.prompt_tokens", minimum=0),
        "completion_tokens": v.integer(c.completion_tokens, f"{name}.completion_tokens", minimum=0),
        "model": v.text(c.model, f"{name}.model", max_len=500, empty=True),
        "operator": v.text(c.operator, f"{name}.operator", optional=True, max_len=64),
        "reward": v.real(c.reward, f"{name}.reward", optional=True),
    }


def _check_candidate(c: Any, name: str, n_calls: int) -> tuple[dict[str, Any], dict[str, Any]]:
    if not isinstance(c, CandidateIn):
        raise TypeError(f"{name}: expected CandidateIn, got {type(c).__name__}")
    if isinstance(c.parents, str) or not isinstance(c.parents, Sequence):
        raise TypeError(f"{name}.parents: expected a list of hashes, got {type(c.parents).__name__}")
    idx = c.llm_call_index
    if idx is not None:
        idx = v.integer(idx, f"{name}.llm_call_index", minimum=0)
        if idx >= n_calls:
            raise ValueError(
                f"{name}.llm_call_index: {idx} is out of range for {n_calls} llm_calls"
            )
    cand = {
        "hash": v.text(c.hash, f"{name}.hash", empty=True),
        "operator": v.text(c.operator, f"{name}.operator", max_len=64),
        "code": v.text(c.code, f"{name}.code", optional=True, max_len=None, empty=True),
        "idea": v.text(c.idea, f"{name}.idea", optional=True, max_len=None, empty=True),
        "parents": [v.text(p, f"{name}.parents[{j}]", empty=True) for j, p in enumerate(c.parents)],
        "reward": v.real(c.reward, f"{name}.reward", optional=True),
        "llm_call_index": idx,
    }
    ev = _evaluation_fields(c.valid, c.score, c.metrics, c.error, c.runtime_s, f"{name}.")
    ev["split"] = v.text(c.split, f"{name}.split", max_len=64)
    ev["candidate_hash"] = cand["hash"]
    return cand, ev


class CampaignsMixin(StoreBase):
    # ---------------------------------------------------------------- campaigns
    def create_campaign(
        self,
        *,
        task: str,
        agent: str,
        llm: str,
        budget: int,
        seed: int,
        executor: str,
        config: dict[str, Any] | None = None,
        name: str | None = None,
        owner: str = DEFAULT_OWNER,
    ) -> str:
        """Store a new campaign (status ``"created"``) and return its 12-hex-digit id.

        ``owner`` is who may see it on the dashboard (default ``"local"``, the operator).
        """
        now = utcnow()
        row = CampaignRow(
            id=new_id(),
            owner=v.text(owner, "owner"),
            name=v.text(name, "name", optional=True),
            task=v.text(task, "task"),
            agent=v.text(agent, "agent", max_len=64),
            llm=v.text(llm, "llm", max_len=500),
            budget=v.integer(budget, "budget", minimum=1, maximum=v.MAX_INT32),
            seed=v.integer(seed, "seed"),
            executor=v.text(executor, "executor", max_len=64),
            config=v.json_dict(config, "config", optional=True),
            status="created",
            created_at=now,
            updated_at=now,
            finished_at=None,
        )
        if not -(2**63) <= row.seed < 2**63:
            raise ValueError(f"seed: must fit in 64 bits, got {row.seed}")
        with self._write() as s:
            s.add(row)
        return row.id

    def get_campaign(self, campaign_id: str, owner: str | None = None) -> Campaign:
        """The campaign ``campaign_id``; unknown, or owned by someone other than ``owner``
        -> :class:`NotFoundError` (the same answer, so another owner's campaign never leaks)."""
        if owner is not None:
            v.text(owner, "owner")
        with self._read() as s:
            return _campaign(self._campaign_row(s, campaign_id, owner))

    def list_campaigns(self, owner: str | None = None, *, limit: int | None = None,
                       offset: int = 0) -> list[Campaign]:
        """Campaigns (of ``owner``, or all), newest first; ``limit``/``offset`` select a page."""
        q = select(CampaignRow)
        if owner is not None:
            q = q.where(CampaignRow.owner == v.text(owner, "owner"))
        q = page(q.order_by(CampaignRow.created_at.desc(), CampaignRow.id), limit, offset)
        with self._read() as s:
            return [_campaign(r) for r in s.scalars(q)]

    def count_campaigns(self, owner: str | None = None) -> int:
        """How many campaigns (of ``owner``, or all) :meth:`list_campaigns` pages through."""
        q = select(func.count()).select_from(CampaignRow)
        if owner is not None:
            q = q.where(CampaignRow.owner == v.text(owner, "owner"))
        with self._read() as s:
            return s.scalar(q)

    def set_campaign_status(self, campaign_id: str, status: str) -> Campaign:
        """Set the status (``created|running|interrupted|finished|failed``).

        ``finished_at`` is set when the campaign ends (finished / failed) and cleared when it
        runs again. Setting ``running`` claims the campaign for the calling process (its
        ``runner``); any other status releases it.

        Raises
        ------
        ConflictError
            ``running`` is asked for while another live process on this machine runs it.
        """
        status = v.choice(status, "status", CAMPAIGN_STATUSES)
        me = this_process()
        with self._write() as s:
            row = self._campaign_row(s, campaign_id)
            if status == "running":
                check_free(campaign_id, row.status, row.runner)
            now = utcnow()
            row.status, row.updated_at = status, now
            row.finished_at = now if status in _ENDED else None
            row.runner = me if status == "running" else None
        return _campaign(row)

    # ---------------------------------------------------------------- rounds
    def record_round(
        self,
        campaign_id: str,
        round: int,
        candidates: Sequence[CandidateIn] = (),
        llm_calls: Sequence[LLMCallIn] = (),
        agent_state: dict[str, Any] | None = None,
    ) -> None:
        """Store everything one round produced in **one transaction**: all of it, or nothing.

        Parameters
        ----------
        campaign_id : str
        round : int
            The round number (>= 0); each round can be recorded once (again -> ConflictError).
        candidates : list of CandidateIn
            Each with its evaluation; ``llm_call_index`` refers to ``llm_calls``.
        llm_calls : list of LLMCallIn
        agent_state : dict, optional
            The agent's state after this round (what :meth:`latest_agent_state` returns).

        Raises
        ------
        NotFoundError, ConflictError, TypeError, ValueError
            Nothing is stored when any is raised.
        """
        rnd = v.integer(round, "round", minimum=0)
        if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
            raise TypeError(f"candidates: expected a list, got {type(candidates).__name__}")
        if isinstance(llm_calls, (str, bytes)) or not isinstance(llm_calls, Sequence):
            raise TypeError(f"llm_calls: expected a list, got {type(llm_calls).__name__}")
        calls = [_check_call(c, f"llm_calls[{i}]") for i, c in enumerate(llm_calls)]
        cands = [_check_candidate(c, f"candidates[{i}]", len(calls)) for i, c in enumerate(candidates)]
        state = None if agent_state is None else v.json_dict(agent_state, "agent_state")
        now = utcnow()
        try:
            with self._write() as s:
                camp = self._campaign_row(s, campaign_id)
                cid = camp.id
                if s.get(RoundRow, (cid, rnd)) is not None:
                    raise ConflictError(f"round: round {rnd} of campaign {cid} is already recorded")
                s.add(RoundRow(campaign_id=cid, round=rnd, created_at=now))
                s.flush()
                call_rows = [LLMCallRow(campaign_id=cid, round=rnd, call_index=i, created_at=now, **c)
                             for i, c in enumerate(calls)]
                eval_rows = [EvaluationRow(campaign_id=cid, created_at=now, **ev) for _, ev in cands]
                s.add_all(call_rows + eval_rows)
                s.flush()
                for (c, _), ev_row in zip(cands, eval_rows, strict=True):
                    idx = c.pop("llm_call_index")
                    s.add(CandidateRow(
                        campaign_id=cid, round=rnd, evaluation_id=ev_row.id, created_at=now,
                        llm_call_id=None if idx is None else call_rows[idx].id, **c,
                    ))
                if state is not None:
                    s.add(AgentStateRow(campaign_id=cid, round=rnd, state=state, created_at=now))
                camp.updated_at = now
        except IntegrityError as exc:
            # Only a concurrent writer of the same round gets here (the check above ran first).
            raise ConflictError(
                f"round: round {rnd} of campaign {campaign_id} is already recorded"
            ) from exc

    def rounds_done(self, campaign_id: str) -> int:
        """Number of committed rounds."""
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            return s.scalar(select(func.count()).select_from(RoundRow).where(RoundRow.campaign_id == cid))

    def latest_agent_state(self, campaign_id: str) -> tuple[int, dict[str, Any]] | None:
        """``(round, state)`` of the newest committed round that stored a state, else ``None``."""
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            row = s.scalars(
                select(AgentStateRow).where(AgentStateRow.campaign_id == cid)
                .order_by(AgentStateRow.round.desc()).limit(1)
            ).first()
            return None if row is None else (row.round, row.state)

    # ---------------------------------------------------------------- candidates
    def _candidate_query(self, s: Session, cid: str, split: str | None, valid: bool | None) -> Any:
        # Each candidate's number in its campaign, counted before any filter applies.
        numbers = (
            select(CandidateRow.id.label("cand_id"),
                   (func.row_number().over(order_by=CandidateRow.id) - 1).label("number"))
            .where(CandidateRow.campaign_id == cid).subquery()
        )
        q = (
            select(CandidateRow, EvaluationRow, LLMCallRow.call_index, numbers.c.number)
            .join(numbers, numbers.c.cand_id == CandidateRow.id)
            .join(EvaluationRow, CandidateRow.evaluation_id == EvaluationRow.id)
            .outerjoin(LLMCallRow, CandidateRow.llm_call_id == LLMCallRow.id)
            .where(CandidateRow.campaign_id == cid)
        )
        if split is not None:
            q = q.where(EvaluationRow.split == v.text(split, "split", max_len=64))
        if valid is not None:
            q = q.where(EvaluationRow.valid == v.boolean(valid, "valid"))
        return q, numbers.c.number

    def candidates(self, campaign_id: str, split: str | None = None,
                   valid: bool | None = None, *, order: str = "number", limit: int | None = None,
                   offset: int = 0) -> list[Candidate]:
        """Stored candidates, optionally filtered by split / validity.

        ``order`` is one of :data:`CANDIDATE_ORDERS` (default: as stored); ``limit``/``offset``
        select a page.
        """
        order = v.choice(order, "order", CANDIDATE_ORDERS)
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            q, number = self._candidate_query(s, cid, split, valid)
            desc = order.startswith("-")
            if order.endswith("score"):
                key = EvaluationRow.score.desc() if desc else EvaluationRow.score.asc()
                q = q.order_by(key.nulls_last(), CandidateRow.id)
            else:
                q = q.order_by(CandidateRow.id.desc() if desc else CandidateRow.id)
            return [_candidate(c, e, i, n) for c, e, i, n in s.execute(page(q, limit, offset))]

    def candidate_outlines(self, campaign_id: str) -> list[CandidateOutline]:
        """Every stored candidate in order, without its texts (see :class:`CandidateOutline`)."""
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            q = (select(CandidateRow.round, CandidateRow.hash, CandidateRow.operator, EvaluationRow.valid,
                        EvaluationRow.score, CandidateRow.reward)
                 .join(EvaluationRow, CandidateRow.evaluation_id == EvaluationRow.id)
                 .where(CandidateRow.campaign_id == cid).order_by(CandidateRow.id))
            return [CandidateOutline(n, *row) for n, row in enumerate(s.execute(q))]

    def count_candidates(self, campaign_id: str, *, valid: bool | None = None,
                         exclude_operator: str | tuple[str, ...] | None = None) -> int:
        """How many candidates the campaign stored (only valid / invalid ones with ``valid``;
        without those of ``exclude_operator`` (one or a tuple), e.g. ``("seed", "tune")`` to
        count what the LLM wrote)."""
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            q = select(func.count()).select_from(CandidateRow).where(CandidateRow.campaign_id == cid)
            if valid is not None:
                q = q.join(EvaluationRow, CandidateRow.evaluation_id == EvaluationRow.id).where(
                    EvaluationRow.valid == v.boolean(valid, "valid"))
            if exclude_operator is not None:
                names = (exclude_operator,) if isinstance(exclude_operator, str) else tuple(exclude_operator)
                q = q.where(CandidateRow.operator.not_in([v.text(n, "exclude_operator") for n in names]))
            return s.scalar(q)

    def get_candidate(self, campaign_id: str, number: int) -> Candidate:
        """The campaign's candidate ``number`` (see :attr:`Candidate.number`); unknown ->
        :class:`NotFoundError`."""
        num = v.integer(number, "number", minimum=0)
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            q, col = self._candidate_query(s, cid, None, None)
            row = s.execute(q.where(col == num)).first() if num <= v.MAX_INT32 else None
            if row is None:
                raise NotFoundError(f"number: no candidate {num} in campaign {cid!r}")
            return _candidate(*row)

    def first_candidate_with_hash(self, campaign_id: str, candidate_hash: str) -> Candidate | None:
        """The earliest stored candidate of the program ``candidate_hash`` (e.g. a parent), or
        ``None``."""
        h = v.text(candidate_hash, "candidate_hash", empty=True)
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            q, _ = self._candidate_query(s, cid, None, None)
            row = s.execute(q.where(CandidateRow.hash == h).order_by(CandidateRow.id).limit(1)).first()
            return None if row is None else _candidate(*row)

    def best_candidates(self, campaign_id: str, k: int = 1, split: str = "train") -> list[Candidate]:
        """The ``k`` best valid candidates of ``split``: lowest score first, one per hash
        (the earliest stored, among equal scores)."""
        k = v.integer(k, "k", minimum=1)
        out: list[Candidate] = []
        seen: set[str] = set()
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            q, _ = self._candidate_query(s, cid, split, True)
            q = q.order_by(EvaluationRow.score, CandidateRow.id)
            for c, e, i, n in s.execute(q.execution_options(yield_per=256)):
                if c.hash in seen:
                    continue
                seen.add(c.hash)
                out.append(_candidate(c, e, i, n))
                if len(out) == k:
                    break
        return out

    # ---------------------------------------------------------------- evaluations
    def add_evaluation(
        self,
        campaign_id: str,
        candidate_hash: str,
        split: str,
        valid: bool,
        score: float | None,
        metrics: dict[str, Any] | None = None,
        error: str | None = None,
        runtime_s: float = 0.0,
    ) -> EvaluationRecord:
        """Store an evaluation outside a round (e.g. the final re-scoring on the test split)."""
        fields = _evaluation_fields(valid, score, metrics, error, runtime_s, "")
        fields["candidate_hash"] = v.text(candidate_hash, "candidate_hash", empty=True)
        fields["split"] = v.text(split, "split", max_len=64)
        with self._write() as s:
            cid = self._campaign_row(s, campaign_id).id
            row = EvaluationRow(campaign_id=cid, created_at=utcnow(), **fields)
            s.add(row)
            s.flush()
        return _evaluation(row)

    def evaluations(self, campaign_id: str, split: str | None = None) -> list[EvaluationRecord]:
        """All evaluations of the campaign (round results and later ones), oldest first."""
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            q = select(EvaluationRow).where(EvaluationRow.campaign_id == cid)
            if split is not None:
                q = q.where(EvaluationRow.split == v.text(split, "split", max_len=64))
            return [_evaluation(e) for e in s.scalars(q.order_by(EvaluationRow.id))]

    def evaluations_count(self, campaign_id: str) -> int:
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            return s.scalar(
                select(func.count()).select_from(EvaluationRow).where(EvaluationRow.campaign_id == cid)
            )

    # ---------------------------------------------------------------- LLM calls
    def llm_calls(self, campaign_id: str) -> list[LLMCall]:
        """Every stored prompt/response, by round then position in the round."""
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            q = (select(LLMCallRow).where(LLMCallRow.campaign_id == cid)
                 .order_by(LLMCallRow.round, LLMCallRow.call_index))
            return [_llm_call(c) for c in s.scalars(q)]

    def get_llm_call(self, campaign_id: str, round: int, index: int) -> LLMCall:
        """The ``index``-th LLM call of the campaign's ``round`` (a candidate's ``round`` and
        ``llm_call_index``); unknown -> :class:`NotFoundError`."""
        rnd = v.integer(round, "round", minimum=0, maximum=v.MAX_INT32)
        idx = v.integer(index, "index", minimum=0, maximum=v.MAX_INT32)
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            row = s.scalars(select(LLMCallRow).where(
                LLMCallRow.campaign_id == cid, LLMCallRow.round == rnd,
                LLMCallRow.call_index == idx)).one_or_none()
            if row is None:
                raise NotFoundError(f"index: no LLM call {idx} in round {rnd} of campaign {cid!r}")
            return _llm_call(row)
