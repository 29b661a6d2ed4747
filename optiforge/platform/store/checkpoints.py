"""Training checkpoints kept as artifacts of a campaign, for every ``... train`` command.

``optiforge scheduling train`` and ``optiforge routing train`` both open a campaign per run
and hand its :class:`StoreCheckpointer` to their trainer; ``--resume ID`` continues from the
newest checkpoint of campaign ``ID``.
"""

from __future__ import annotations

from optiforge.platform.store.store import Store

KIND = "checkpoint"
"""Artifact kind of a training checkpoint."""


class StoreCheckpointer:
    """Training checkpoints as artifacts (kind ``checkpoint``) of a campaign in the store.

    Satisfies :class:`optiforge.heuristics.checkpoints.Checkpointer`.

    Parameters
    ----------
    store : Store
        The open store.
    campaign_id : str
        The training run's campaign (it must exist).
    """

    def __init__(self, store: Store, campaign_id: str) -> None:
        self.store, self.campaign_id = store, campaign_id

    def save(self, name: str, data: bytes) -> None:
        """Keep ``data`` as the campaign's checkpoint artifact ``name``."""
        self.store.add_artifact(self.campaign_id, KIND, name, data)

    def latest(self) -> bytes | None:
        """The newest checkpoint by name (names sort in training order), or None."""
        kept = sorted(self.store.artifacts(self.campaign_id, KIND), key=lambda a: a.name)
        return kept[-1].path.read_bytes() if kept else None
