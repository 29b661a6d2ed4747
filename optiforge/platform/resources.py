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
- **glibc's mmap threshold.** glibc serves a request of at least ``M_MMAP_THRESHOLD`` bytes
  with its own ``mmap`` (returned to the OS on ``free``) and the rest from the heap. By default
  the threshold is *dynamic*: each freed mmapped block raises it to that block's size (up to
  32 MB), so after the first few freed tensors every activation, dequantised weight and logits
  row of a forward pass lands in the heap, and the heap's free pages stay in the RSS. One GRPO
  update of the bundled model then peaked at 3.0 GB where its live tensors needed 1.6 GB
  (docs/benchmarks/memory.md). A fixed threshold (``mallopt(M_MMAP_THRESHOLD, ...)``, which
  also turns the dynamic adjustment off) sends every tensor above it to ``mmap``.

  That low threshold is for the GRPO update only (:func:`returning_freed_tensors`). In
  generation the NF4 backend dequantises each weight into a fresh buffer of a few MB for every
  matmul; with a 256 KiB threshold each of them is an ``mmap`` whose pages fault in again on
  every token: 2.4x slower decoding, half the CPU time in the kernel (5.1 against 12.4 tokens/s,
  31 s against 0.5 s of system time for the same 512 tokens; docs/benchmarks/memory.md). The rest
  of the process therefore runs with a fixed 32 MiB threshold (the dynamic one's ceiling), which
  keeps those buffers on the heap.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

THREADS_ENV = "OPTIFORGE_THREADS"
_M_ARENA_MAX = -8  # glibc's mallopt parameter numbers
_M_MMAP_THRESHOLD = -3
# In an update, tensors above this size are mmapped: a 576-wide fp32 activation row block of 128
# tokens is 288 KiB, so every activation of the bundled model's forward pass is returned on free.
DEFAULT_MMAP_THRESHOLD = 256 * 1024
# Everywhere else: glibc's dynamic threshold's ceiling, fixed (dequantised weights stay on the heap).
GENERATION_MMAP_THRESHOLD = 32 * 1024 * 1024


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


def apply_budget(
    threads: int | None = None,
    *,
    malloc_arenas: int = 2,
    mmap_threshold: int = GENERATION_MMAP_THRESHOLD,
) -> int:
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
    mmap_threshold : int
        Bytes from which glibc serves an allocation with ``mmap`` (fixed, so it no longer
        rises after frees); 0 leaves glibc's dynamic default. Default 32 MiB; an update lowers
        it for its own duration (:func:`returning_freed_tensors`). Only later allocations are
        affected, so call this before the model loads.

    Raises
    ------
    ValueError
        On a thread count below 1 or a negative ``malloc_arenas`` / ``mmap_threshold``.
    """
    if threads is None:
        threads = (
            int(os.environ["OMP_NUM_THREADS"])
            if os.environ.get("OMP_NUM_THREADS", "").isdigit()
            else thread_budget()
        )
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads: expected an int >= 1, got {threads!r}")
    for name, value in (("malloc_arenas", malloc_arenas), ("mmap_threshold", mmap_threshold)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name}: expected an int >= 0, got {value!r}")
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if "torch" in sys.modules:
        import torch

        torch.set_num_threads(threads)
    lib = _libc()
    if lib is not None and malloc_arenas > 0:
        lib.mallopt(_M_ARENA_MAX, malloc_arenas)
    if mmap_threshold > 0:
        set_mmap_threshold(mmap_threshold)
    return threads


def release_free_memory() -> None:
    """Return the allocator's free pages to the OS (glibc ``malloc_trim``; no-op elsewhere)."""
    lib = _libc()
    if lib is not None:
        lib.malloc_trim(0)


def set_mmap_threshold(nbytes: int) -> None:
    """Fix glibc's mmap threshold at ``nbytes`` (no-op where glibc is absent)."""
    lib = _libc()
    if lib is not None:
        lib.mallopt(_M_MMAP_THRESHOLD, int(nbytes))


@contextmanager
def returning_freed_tensors(threshold: int = DEFAULT_MMAP_THRESHOLD,
                            after: int = GENERATION_MMAP_THRESHOLD) -> Iterator[None]:
    """A phase whose freed tensors go back to the OS at once (a GRPO update's activations).

    The heap's free pages are returned first, the threshold is lowered to ``threshold`` for the
    block, then set to ``after`` and the pages freed in the block are returned too.
    """
    release_free_memory()
    set_mmap_threshold(threshold)
    try:
        yield
    finally:
        set_mmap_threshold(after)
        release_free_memory()
