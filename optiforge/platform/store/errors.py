"""Store errors. Both subclass ValueError so callers that only know "bad input" still catch them."""

from __future__ import annotations


class NotFoundError(ValueError):
    """An id (campaign, study, trial, token) does not exist, or is not visible to the caller."""


class ConflictError(ValueError):
    """The write contradicts what is stored (a round recorded twice, a trial finished twice)."""
