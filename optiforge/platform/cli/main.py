"""Entry point of the ``optiforge`` command: registers the sub-command groups."""

from __future__ import annotations

import logging
import os
import warnings

import typer

# Heavy libraries load lazily, later.
from optiforge.platform.cli import campaign, dashboard, matching, probe, study

# Library chatter (download/conversion progress bars, hub warnings) would drown the campaign's
# own progress bar; users can still opt back in by setting these themselves.
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# bitsandbytes warns on every CPU load that it could not fetch an optional kernel from the Hub;
# optiforge never uses the Hub, so the warning is noise here.
logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)
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
dashboard.register(app)


def main() -> None:
    app()
