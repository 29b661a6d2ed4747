"""Black-box studies and their trials (the store behind ask/tell)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from optiforge import validation as v
from optiforge.platform.store.base import StoreBase, new_id, page
from optiforge.platform.store.errors import ConflictError, NotFoundError
from optiforge.platform.store.models import StudyRow, TrialRow, utcnow
from optiforge.platform.store.records import (
    DIRECTIONS,
    OPEN_TRIAL_STATES,
    TRIAL_STATES,
    StudyRecord,
    Trial,
)

_FINISHED = ("complete", "failed")
TRIAL_ORDERS = ("number", "-number", "value", "-value")
MAX_TRIAL_NUMBER = 2**31 - 1


def _study(r: StudyRow) -> StudyRecord:
    return StudyRecord(
        id=r.id, owner=r.owner, name=r.name, space=r.space, direction=r.direction, agent=r.agent,
        agent_options=r.agent_options, n_trials=r.n_trials, created_at=r.created_at,
    )


def _trial(r: TrialRow) -> Trial:
    return Trial(
        id=r.id, study_id=r.study_id, number=r.number, params=r.params, value=r.value,
        state=r.state, created_at=r.created_at, finished_at=r.finished_at,
    )


def _finish_fields(value: Any, state: Any) -> tuple[float | None, str]:
    state = v.choice(state, "state", _FINISHED)
    value = v.real(value, "value", optional=True)
    if state == "complete" and value is None:
        raise ValueError("value: a complete trial needs a finite value")
    return value, state


def _check_number(number: Any) -> int:
    # Trials are addressed by their number within the study: row ids are one global sequence,
    # and showing them would tell one tenant how busy every other tenant is.
    return v.integer(number, "trial_id", minimum=0)


def _number_exists(num: int, sid: str) -> None:
    if num > MAX_TRIAL_NUMBER:  # beyond the column's range: no such trial (never a DB overflow)
        raise NotFoundError(f"trial_id: no trial {num} in study {sid!r}")


class StudiesMixin(StoreBase):
    def _study_row(self, s: Session, study_id: Any, owner: str | None = None) -> StudyRow:
        sid = self._check_id(study_id, "study_id")
        row = s.get(StudyRow, sid)
        # Another owner's study answers exactly like a missing one: its existence never leaks.
        if row is None or (owner is not None and row.owner != owner):
            raise NotFoundError(f"study_id: no study {sid!r}")
        return row

    def create_study(
        self,
        owner: str,
        space: dict[str, Any],
        direction: str = "minimize",
        agent: str = "hollm",
        agent_options: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> str:
        """Store a new study and return its 12-hex-digit id.

        The store checks only the shapes (``space`` a JSON dict, ``direction`` one of
        ``minimize|maximize``); the search space's meaning is validated by
        :mod:`optiforge.blackbox.space`.
        """
        space = v.json_dict(space, "space")
        if not space:
            raise ValueError("space: must define at least one parameter")
        row = StudyRow(
            id=new_id(),
            owner=v.text(owner, "owner"),
            name=v.text(name, "name", optional=True),
            space=space,
            direction=v.choice(direction, "direction", DIRECTIONS),
            agent=v.text(agent, "agent", max_len=64),
            agent_options=v.json_dict(agent_options, "agent_options", optional=True),
            n_trials=0,
            created_at=utcnow(),
        )
        with self._write() as s:
            s.add(row)
        return row.id

    def get_study(self, study_id: str, owner: str | None = None) -> StudyRecord:
        """The study; unknown, or owned by someone other than ``owner`` -> NotFoundError."""
        if owner is not None:
            v.text(owner, "owner")
        with self._read() as s:
            return _study(self._study_row(s, study_id, owner))

    def list_studies(self, owner: str | None = None, *, limit: int | None = None,
                     offset: int = 0) -> list[StudyRecord]:
        """Studies (of ``owner``, or all), newest first; ``limit``/``offset`` select a page."""
        q = select(StudyRow)
        if owner is not None:
            q = q.where(StudyRow.owner == v.text(owner, "owner"))
        q = page(q.order_by(StudyRow.created_at.desc(), StudyRow.id), limit, offset)
        with self._read() as s:
            return [_study(r) for r in s.scalars(q)]

    def count_studies(self, owner: str | None = None) -> int:
        """How many studies (of ``owner``, or all) :meth:`list_studies` pages through."""
        q = select(func.count()).select_from(StudyRow)
        if owner is not None:
            q = q.where(StudyRow.owner == v.text(owner, "owner"))
        with self._read() as s:
            return s.scalar(q)

    def _insert_trials(self, s: Session, sid: str, params: list[dict[str, Any]], state: str,
                       value: float | None) -> list[Trial]:
        n = len(params)
        # UPDATE ... RETURNING takes the study row's write lock (PostgreSQL) / runs under the
        # database write lock (SQLite BEGIN IMMEDIATE), so concurrent callers get disjoint,
        # gap-free ranges of trial numbers.
        end = s.execute(
            update(StudyRow).where(StudyRow.id == sid)
            .values(n_trials=StudyRow.n_trials + n).returning(StudyRow.n_trials)
        ).scalar_one_or_none()
        if end is None:
            raise NotFoundError(f"study_id: no study {sid!r}")
        now = utcnow()
        finished = now if state in _FINISHED else None
        rows = [TrialRow(study_id=sid, number=end - n + i, params=p, value=value, state=state,
                         created_at=now, finished_at=finished) for i, p in enumerate(params)]
        s.add_all(rows)
        s.flush()
        return [_trial(r) for r in rows]

    def create_trials(self, study_id: str, params_list: Sequence[dict[str, Any]],
                      state: str = "running") -> list[Trial]:
        """Create one trial per params dict, numbered consecutively after the study's last.

        Numbers are assigned atomically: concurrent callers (threads or processes, on SQLite or
        PostgreSQL) never get the same number and leave no gaps.
        """
        sid = self._check_id(study_id, "study_id")
        if isinstance(params_list, (str, bytes, dict)) or not isinstance(params_list, Sequence):
            raise TypeError(f"params_list: expected a list of dicts, got {type(params_list).__name__}")
        params = [v.json_dict(p, f"params_list[{i}]") for i, p in enumerate(params_list)]
        state = v.choice(state, "state", OPEN_TRIAL_STATES)
        if not params:
            with self._read() as s:
                self._study_row(s, sid)
            return []
        with self._write() as s:
            return self._insert_trials(s, sid, params, state, None)

    def add_trial(self, study_id: str, params: dict[str, Any], value: float | None,
                  state: str = "complete") -> Trial:
        """Record an already evaluated point (e.g. evaluated outside optiforge)."""
        sid = self._check_id(study_id, "study_id")
        p = v.json_dict(params, "params")
        value, state = _finish_fields(value, state)
        with self._write() as s:
            return self._insert_trials(s, sid, [p], state, value)[0]

    def finish_trial(self, study_id: str, number: int, value: float | None,
                     state: str = "complete") -> Trial:
        """Finish the study's waiting/running trial ``number`` (``complete`` or ``failed``).

        Raises
        ------
        NotFoundError
            No such trial in this study.
        ConflictError
            The trial is already finished (exactly one of two concurrent calls wins).
        """
        sid = self._check_id(study_id, "study_id")
        num = _check_number(number)
        value, state = _finish_fields(value, state)
        _number_exists(num, sid)
        where = (TrialRow.study_id == sid, TrialRow.number == num)
        with self._write() as s:
            # The state check is inside the UPDATE: two concurrent tells cannot both win.
            result = s.execute(
                update(TrialRow)
                .where(*where, TrialRow.state.in_(OPEN_TRIAL_STATES))
                .values(value=value, state=state, finished_at=utcnow())
                .execution_options(synchronize_session=False)
            )
            row = s.scalars(select(TrialRow).where(*where)
                            .execution_options(populate_existing=True)).one_or_none()
            if row is None:
                raise NotFoundError(f"trial_id: no trial {num} in study {sid!r}")
            if result.rowcount == 0:
                raise ConflictError(f"trial_id: trial {num} is already finished ({row.state})")
            return _trial(row)

    def get_trial(self, study_id: str, number: int) -> Trial:
        """The study's trial ``number``; unknown -> NotFoundError."""
        sid = self._check_id(study_id, "study_id")
        num = _check_number(number)
        _number_exists(num, sid)
        with self._read() as s:
            row = s.scalars(select(TrialRow).where(TrialRow.study_id == sid,
                                                   TrialRow.number == num)).one_or_none()
            if row is None:
                raise NotFoundError(f"trial_id: no trial {num} in study {sid!r}")
            return _trial(row)

    def _trials_query(self, s: Session, study_id: str, states: Iterable[str] | None) -> Any:
        if isinstance(states, str):
            states = [states]
        wanted = None if states is None else [v.choice(x, "states", TRIAL_STATES) for x in states]
        sid = self._study_row(s, study_id).id
        q = select(TrialRow).where(TrialRow.study_id == sid)
        return q if wanted is None else q.where(TrialRow.state.in_(wanted))

    def trials(self, study_id: str, states: Iterable[str] | None = None, *, limit: int | None = None,
               offset: int = 0, order: str = "number") -> list[Trial]:
        """The study's trials, optionally only those in ``states``; ``limit``/``offset`` page.

        ``order`` is one of :data:`TRIAL_ORDERS`: by number (default) or by value (``-`` =
        descending; trials without a value sort last).
        """
        order = v.choice(order, "order", TRIAL_ORDERS)
        desc = order.startswith("-")
        if order.endswith("value"):
            key = TrialRow.value.desc() if desc else TrialRow.value.asc()
            keys: tuple[Any, ...] = (key.nulls_last(), TrialRow.number)
        else:
            keys = (TrialRow.number.desc() if desc else TrialRow.number,)
        with self._read() as s:
            q = self._trials_query(s, study_id, states).order_by(*keys)
            return [_trial(r) for r in s.scalars(page(q, limit, offset))]

    def count_trials(self, study_id: str, states: Iterable[str] | None = None) -> int:
        """How many trials (in ``states``, or all) :meth:`trials` pages through."""
        with self._read() as s:
            q = self._trials_query(s, study_id, states)
            return s.scalar(select(func.count()).select_from(q.subquery()))
