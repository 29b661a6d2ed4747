"""The CPU and allocator budget of one campaign process, so several can share a machine.

Two levers, both applied once, before the model is loaded:

- **Threads.** torch, OpenMP (bitsandbytes) and llama.cpp each start one thread per core by
  default. Three such processes on two cores run six compute threads on two cores, and
  OpenMP's spinning barriers make the oversubscription cost several times the fair share
  (docs/benchmarks/llm.md). A process gets ``OPTIFORGE_THREADS`` threads (default: half the
  cores, at least one) and OpenMP waits passively (``OMP_WAIT_POLICY=passive``: an idle
  thread sleeps instead of spinning), so a campaign alone loses little and several share fairly.
- **glibc arenas.** glibc gives every thread that allocates its own malloc arena (up to 8 per
  core) and rarely returns their free pages; torch's intra-op threads and the sandbox's
  reader threads each leave one behind. ``mallopt(M_ARENA_MAX, 2)`` caps them and
  :func:`release_free_memory` (``malloc_trim``) hands freed pages back after a large phase
  (a GRPO update).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

THREADS_ENV = "OPTIFORGE_THREADS"
_M_ARENA_MAX = -8  # glibc's mallopt parameter number


def default_threads() -> int:
    """Half of the CPUs this process may run on, at least one."""
    return max(1, len(os.sched_getaffinity(0)) // 2)


def thread_budget() -> int:
    """Threads one campaign process uses: ``$OPTIFORGE_THREADS``, else :func:`default_threads`.

    Raises
    ------
    ValueError
        If ``OPTIFORGE_THREADS`` is set but not a positive integer.
    """
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return default_threads()
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{THREADS_ENV}: expected a positive integer, got {raw!r}")
    return int(raw)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name or "libc.so.6")
    except OSError:
        return None
    return lib if hasattr(lib, "mallopt") and hasattr(lib, "malloc_trim") else None


def apply_budget(threads: int | None = None, *, malloc_arenas: int = 2) -> int:
    """Apply the thread and allocator budget to this process; returns the thread count.

    ``OMP_NUM_THREADS`` and ``OMP_WAIT_POLICY`` only take effect if OpenMP has not started
    yet (call this before importing torch); torch's own pool is set directly, and the LLM
    backends read ``OMP_NUM_THREADS`` (llama.cpp) when they are built. An explicit
    ``OMP_NUM_THREADS`` in the environment is the user's choice and is kept.

    Parameters
    ----------
    threads : int, optional
        Default :func:`thread_budget`.
    malloc_arenas : int
        glibc arena cap (0 leaves glibc's default).
    """
    if threads is None:
        threads = int(os.environ["OMP_NUM_THREADS"]) if os.environ.get("OMP_NUM_THREADS", "").isdigit() \
            else thread_budget()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads: expected an int >= 1, got {threads!r}")
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if "torch" in sys.modules:
        import torch

        torch.set_num_threads(threads)
    lib = _libc()
    if lib is not None and malloc_arenas > 0:
        lib.mallopt(_M_ARENA_MAX, malloc_arenas)
    return threads


def release_free_memory() -> None:
    """Return the allocator's free pages to the OS (glibc ``malloc_trim``; no-op elsewhere)."""
    lib = _libc()
    if lib is not None:
        lib.malloc_trim(0)
