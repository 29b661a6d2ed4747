"""The progress callback every probe accepts: ``progress(done, total)``, called as work completes."""

from collections.abc import Callable

Progress = Callable[[int, int], None]
