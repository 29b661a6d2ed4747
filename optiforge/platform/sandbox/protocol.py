"""Length-prefixed frames over pipes between the Sandbox (trusted) and its zygotes (trusted).

Only JSON headers and raw byte payloads cross the pipes, never pickles: the solution bytes
originate in an untrusted child and are decoded with :func:`json.loads` in the parent.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

_LEN = struct.Struct(">Q")
MAX_FRAME = 1 << 31


class ProtocolError(RuntimeError):
    """The peer closed the pipe, timed out, or sent a malformed frame."""


def write_frame(fd: int, data: bytes) -> None:
    _write_all(fd, _LEN.pack(len(data)) + data)


def write_message(fd: int, header: dict[str, Any], payload: bytes = b"") -> None:
    """Send a JSON header frame followed by a raw payload frame."""
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    _write_all(fd, _LEN.pack(len(head)) + head + _LEN.pack(len(payload)) + payload)


def read_message(fd: int, deadline: float | None = None) -> tuple[dict[str, Any], bytes]:
    header = json.loads(read_frame(fd, deadline).decode("utf-8"))
    if not isinstance(header, dict):
        raise ProtocolError("malformed header frame")
    return header, read_frame(fd, deadline)


def read_frame(fd: int, deadline: float | None = None) -> bytes:
    (size,) = _LEN.unpack(_read_exact(fd, _LEN.size, deadline))
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes exceeds the protocol limit")
    return _read_exact(fd, size, deadline)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, size: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise ProtocolError("timed out waiting for the peer")
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise ProtocolError("peer closed the pipe")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
