"""A real ``optiforge serve`` in a child process, and raw-socket clients an attacker would use.

(A unique module name: the test folders share one ``sys.path``.)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

import optiforge
from optiforge.platform.store import Store

REPO_ROOT = Path(optiforge.__file__).resolve().parent.parent
PG_ENV = "OPTIFORGE_TEST_POSTGRES_URL"
SPACE = {"x": {"type": "float", "low": -5, "high": 10}, "n": {"type": "int", "low": 1, "high": 8}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    port: int
    proc: subprocess.Popen
    db: str

    def token(self, owner: str) -> str:
        store = Store(self.db)
        try:
            return store.create_token(owner)
        finally:
            store.close()

    def headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def rss_bytes(self) -> int:
        """The server process's resident memory, from /proc (Linux)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS in /proc status")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


def start_server(db: str, *args: str, env: dict[str, str] | None = None, tmp: Path | None = None) -> Server:
    """``optiforge serve --db DB ARGS`` on a free port; returns once ``/v1/health`` answers."""
    port = free_port()
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), child_env.get("PYTHONPATH", "")) if p)
    child_env.setdefault("OMP_NUM_THREADS", "1")
    log = open(tmp / f"server-{port}.log", "wb") if tmp is not None else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "optiforge.platform.cli", "serve", "--port", str(port), "--db", db,
         "--log-level", "warning", *args],
        cwd=REPO_ROOT, env=child_env, stdout=log, stderr=subprocess.STDOUT,
    )
    server = Server(f"http://127.0.0.1:{port}", port, proc, db)
    deadline = time.monotonic() + 180  # generous: a loaded 2-core machine imports slowly
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode} before answering")
        try:
            if httpx.get(f"{server.url}/v1/health", timeout=5).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise AssertionError("server did not answer /v1/health")
        time.sleep(0.2)


def raw_request(port: int, head: bytes, body_chunks=(), timeout: float = 60.0) -> bytes:
    """Send ``head`` then the body chunks on a raw socket, stopping if the server closes.

    Returns what the server answered (possibly empty). An attacker does not wait for the
    answer before uploading, and neither does this.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head)
        try:
            for chunk in body_chunks:
                s.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered early and closed: what we want
        return read_all(s)


def read_all(s: socket.socket) -> bytes:
    out = b""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                break
            out += data
            if b"\r\n\r\n" in out and _complete(out):
                break
    except (ConnectionResetError, TimeoutError):
        pass
    return out


def _complete(resp: bytes) -> bool:
    head, _, body = resp.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def status_of(resp: bytes) -> int:
    """The status code of a raw HTTP response (0 if there is none)."""
    if not resp.startswith(b"HTTP/1."):
        return 0
    return int(resp.split(b" ", 2)[1])
