"""Value types of the sandbox: the resource/isolation policy and the result of one run."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits and isolation switches for every sandboxed evaluation.

    All isolation is on by default; the switches exist so that tests (and users on
    machines without namespaces) can exercise the degraded modes explicitly.

    Parameters
    ----------
    timeout_s : float
        Wall-clock limit per evaluation; on expiry the child's whole process group is SIGKILLed.
    cpu_s : float or None
        CPU-time limit (``RLIMIT_CPU``); ``None`` means ``timeout_s``.
    memory_mb : int
        Address-space limit (``RLIMIT_AS``) in MiB.
    max_output_bytes : int
        Largest JSON-encoded solution accepted from the child; larger ones are rejected.
    max_stdout_bytes : int
        How much of the program's stdout/stderr is kept (the rest is discarded).
    max_file_mb : int
        Largest file the program may write (``RLIMIT_FSIZE``) and size of each private tmpfs.
    max_open_files : int
        ``RLIMIT_NOFILE`` for the child.
    namespaces : bool
        Use Linux namespaces (network, mount; a user namespace when not root) where permitted.
    drop_privileges : bool
        When running as root, switch the child to ``sandbox_uid``/``sandbox_gid``.
    audit_hook : bool
        Install the ``sys.addaudithook`` guard in the child (defence in depth).
    sandbox_uid, sandbox_gid : int
        Unprivileged identity of the child when dropping root (``nobody``/``nogroup``).
    """

    timeout_s: float = 30.0
    cpu_s: float | None = None
    memory_mb: int = 2048
    max_output_bytes: int = 16 * 1024 * 1024
    max_stdout_bytes: int = 64 * 1024
    max_file_mb: int = 64
    max_open_files: int = 64
    namespaces: bool = True
    drop_privileges: bool = True
    audit_hook: bool = True
    sandbox_uid: int = 65534
    sandbox_gid: int = 65534

    def __post_init__(self) -> None:
        _positive_number("timeout_s", self.timeout_s)
        if self.cpu_s is not None:
            _positive_number("cpu_s", self.cpu_s)
        for name in ("memory_mb", "max_output_bytes", "max_stdout_bytes", "max_file_mb", "max_open_files"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name}: expected int, got {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name}: must be > 0, got {value}")
        if self.max_open_files < 8:
            raise ValueError(f"max_open_files: must be >= 8, got {self.max_open_files}")
        for name in ("namespaces", "drop_privileges", "audit_hook"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name}: expected bool, got {type(getattr(self, name)).__name__}")
        for name in ("sandbox_uid", "sandbox_gid"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name}: must be a positive int (not root), got {value!r}")

    @property
    def effective_cpu_s(self) -> float:
        return self.timeout_s if self.cpu_s is None else self.cpu_s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _positive_number(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: must be a finite number > 0, got {value!r}")


@dataclass
class SandboxResult:
    """Outcome of running one program in the sandbox (nothing here is scored yet).

    Attributes
    ----------
    ok : bool
        The program ran to completion and returned a JSON solution within the limits.
    solution : Any
        The JSON-decoded solution (``None`` unless ``ok``). Untrusted: the task's scorer validates it.
    error : str or None
        Why the run failed (exception text with the program's line, a limit, a protocol error).
    runtime_s : float
        Wall-clock time of the child process, measured by the trusted zygote.
    stdout : str
        The program's stdout+stderr, truncated to ``max_stdout_bytes``.
    killed : str or None
        ``"timeout"``, ``"cpu"``, ``"memory"``, ``"output"``, ``"signal N"`` or ``"worker died"``
        when the run was stopped by a limit rather than finishing.
    """

    ok: bool
    solution: Any = None
    error: str | None = None
    runtime_s: float = 0.0
    stdout: str = ""
    killed: str | None = None
