"""Which process runs a campaign, and whether that process is still there.

A campaign is ``running`` while a process drives it. A process killed with ``kill -9`` (or by
the OOM killer, or a power cut) cannot say that it stopped, so the store also records *which*
process claimed the campaign. From that record anyone on the same machine can tell a live run
from a dead one: a dead run reads as ``interrupted`` (and can be resumed), and a live one
cannot be claimed a second time (two processes would spend the budget twice and interleave
rounds).

A runner is ``"host/boot/pid/start"``: the host name, the kernel's boot id (pids restart
after a reboot), the pid, and the process's start time in clock ticks since boot (a pid can
be reused by a later process; the start time tells them apart). Runners on another host
cannot be checked from here (``"unknown"``): their campaigns keep reading as ``running``, and a
claim from this machine is not refused.
"""

from __future__ import annotations

import functools
import os
import socket
from typing import Literal

from optiforge.platform.store.errors import ConflictError

RunnerState = Literal["alive", "gone", "unknown"]


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()[:8]
    except OSError:
        return "-"


def _start_ticks(pid: int) -> str | None:
    """The process's start time (field 22 of ``/proc/PID/stat``), or None if it has ended."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc (not Linux): the pid alone, checked with a null signal
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return "-"
    # The command name (field 2) is in parentheses and may itself hold spaces or parentheses.
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):  # killed, only waiting for its parent to reap it
        return None
    return fields[19]


def this_process() -> str:
    """The runner string of the calling process."""
    return _identity(os.getpid())


@functools.lru_cache(maxsize=4)
def _identity(pid: int) -> str:
    # Keyed by pid: a forked child is another process and gets its own string.
    return f"{socket.gethostname()}/{_boot_id()}/{pid}/{_start_ticks(pid) or '-'}"


def runner_state(runner: str | None) -> RunnerState:
    """``"alive"``, ``"gone"``, or ``"unknown"`` (no runner recorded, or another host's).

    Parameters
    ----------
    runner : str or None
        A string made by :func:`this_process`.
    """
    if not runner:
        return "unknown"
    try:
        host, boot, pid, start = runner.rsplit("/", 3)
        pid_number = int(pid)
    except ValueError:
        return "unknown"
    if host != socket.gethostname():
        return "unknown"
    if boot != _boot_id():
        return "gone"  # the machine rebooted since
    ticks = _start_ticks(pid_number)
    if ticks is None or (start != "-" and ticks != "-" and ticks != start):
        return "gone"
    return "alive"


def check_free(campaign_id: str, status: str, runner: str | None) -> None:
    """Raise ``ConflictError`` if another live process on this machine runs the campaign.

    Parameters
    ----------
    campaign_id, status, runner
        The campaign's id, its stored status and its runner.
    """
    if status == "running" and runner not in (None, this_process()) and runner_state(runner) == "alive":
        host, _, pid, _ = runner.rsplit("/", 3)
        raise ConflictError(f"campaign {campaign_id} is already running (process {pid} on {host}); "
                            "stop that run before starting another")
