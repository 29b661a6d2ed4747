"""Entry point of the ``optiforge`` command: registers the sub-command groups."""

from __future__ import annotations

import logging
import os
import warnings

import typer

# Heavy libraries load lazily, later.
from optiforge.platform.cli import (
    campaign,
    dashboard,
    manifold,
    matching,
    models,
    probe,
    routing,
    scheduling,
    study,
    train,
)

# Library chatter (download/conversion progress bars, hub warnings) would drown the campaign's
# own progress bar; users can still opt back in by setting these themselves.
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Libraries warn through logging on every model load (bitsandbytes: an optional kernel not fetched
# from the Hub; kernels: a publisher check skipped offline). optiforge never uses the Hub, so these
# are noise that would break the CLI's one-line error contract. Only errors from libraries reach
# stderr; optiforge's own warnings still do. OPTIFORGE_LIBRARY_LOG_LEVEL=WARNING opts back in.
_library_level = os.environ.get("OPTIFORGE_LIBRARY_LOG_LEVEL", "ERROR").upper()
logging.getLogger().setLevel(
    _library_level if isinstance(logging.getLevelName(_library_level), int) else logging.ERROR)
logging.getLogger("optiforge").setLevel(logging.WARNING)
# Deprecation notices from inside transformers/peft are for their maintainers, not our users.
warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|peft)\.")


app = typer.Typer(
    name="optiforge",
    help="LLM-orchestrated optimization and heuristic discovery.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
campaign.register(app)
study.register(app)
probe.register(app)
matching.register(app)
routing.register(app)
scheduling.register(app)
dashboard.register(app)
manifold.register(app)
train.register(app)
models.register(app)


def main() -> None:
    app()
