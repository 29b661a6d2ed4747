"""``optiforge manifold``: optimise over a data manifold known from samples (score + DLF/DRGD).

::

    optiforge manifold data --system unicycle --n 2000 --length 32 --out traj.npy
    optiforge manifold fit-score --data traj.npy --out score.pt --steps 4000
    optiforge manifold optimize --score score.pt --objective tracking:ref.npy --start traj.npy \\
        --method drgd --t 0.3 --gamma 0.02 --steps 100 --out best.npy

``--objective`` is ``tracking:REF.npy`` (reference tracking of the outputs, the inputs are the
first ``--inputs`` channels), ``linear:C.npy``, ``brockett:A.npy`` (``N = diag(1..n)``) or
``module:function`` (a function of a torch batch returning one value per row). The start is the
row of ``--start`` with the lowest objective (the paper's choice: the best training
trajectory), or every row with ``--all``. Bad input: one ``error:`` line, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import typer

from optiforge.platform.cli.errors import user_errors

manifold_app = typer.Typer(help="Data-manifold optimization: generate data, fit a score, optimise.",
                           no_args_is_help=True)
METHODS = ("drgd", "dlf")


def register(app: typer.Typer) -> None:
    """Add the ``manifold`` group to ``app``."""
    app.add_typer(manifold_app, name="manifold")


def _load_npy(path: Path, what: str) -> np.ndarray:
    if not path.is_file():
        raise FileNotFoundError(f"{what}: no such file {str(path)!r}")
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise ValueError(f"{what}: {str(path)!r} is not a .npy array ({exc})") from None
    if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: expected a finite numeric array")
    return arr.astype(np.float64)


@manifold_app.command("data")
@user_errors
def data(
    out: Path = typer.Option(..., help="Where to write the .npy array."),
    system: str = typer.Option(None, help="Trajectories of: unicycle | double-pendulum."),
    synthetic: str = typer.Option(None, help="Points of: circle | sphere | torus | so3."),
    n: int = typer.Option(1000, help="How many trajectories or points."),
    length: int = typer.Option(32, help="Time steps per trajectory."),
    seed: int = typer.Option(0, help="Seed."),
) -> None:
    """Generate training data: simulated trajectories (N, T, U+Y) or manifold samples (N, D)."""
    from optiforge import validation as check
    from optiforge.blackbox.manifold import synthetic as sample
    from optiforge.blackbox.manifold import trajectories

    if (system is None) == (synthetic is None):
        raise ValueError("data: give exactly one of --system or --synthetic")
    check.integer(n, "n", minimum=1, maximum=1_000_000)
    check.integer(length, "length", minimum=1, maximum=100_000)
    arr = trajectories(system, n, length, seed) if system else sample(synthetic, n, seed)
    np.save(out, arr)
    print(json.dumps({"out": str(out), "shape": list(arr.shape)}))


@manifold_app.command("fit-score")
@user_errors
def fit_score(
    data: Path = typer.Option(..., help=".npy of points (N, D) or trajectories (N, T, C)."),
    out: Path = typer.Option(Path("score.pt"), help="Where to save the trained score model."),
    steps: int = typer.Option(4000, help="Training steps."),
    batch: int = typer.Option(256, help="Batch size."),
    lr: float = typer.Option(2e-3, help="Adam learning rate."),
    sigma_min: float = typer.Option(0.005, help="Smallest noise level (standardised units)."),
    sigma_max: float = typer.Option(5.0, help="Largest noise level."),
    width: int = typer.Option(128, help="MLP width / 4x the UNet's first channels."),
    kind: str = typer.Option("auto", help="auto | mlp | unet1d."),
    seed: int = typer.Option(0, help="Seed."),
) -> None:
    """Train a small score network by denoising score matching (progress bar on stderr)."""
    import torch
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from optiforge.blackbox.manifold import fit_score as fit
    from optiforge.blackbox.manifold import model_summary

    arr = torch.as_tensor(_load_npy(data, "data"))
    with Progress(TextColumn("fit-score"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("loss {task.fields[loss]:.4f}"), TimeRemainingColumn(),
                  transient=True) as bar:
        task = bar.add_task("fit", total=steps, loss=float("nan"))
        model = fit(arr, kind=kind, steps=steps, batch=batch, lr=lr, sigma_min=sigma_min,
                    sigma_max=sigma_max, width=width, seed=seed,
                    progress=lambda i, total, loss: bar.update(task, completed=i, loss=loss))
    model.save(out)
    print(json.dumps({"out": str(out), **model_summary(model)}))


def _objective(spec: str, inputs: int) -> Any:
    import torch

    from optiforge.blackbox.manifold import brockett_objective, linear_objective, tracking_objective
    from optiforge.plugins import load_ref

    kind, sep, arg = spec.partition(":")
    if not sep or not arg:
        raise ValueError(f"objective: expected tracking:REF.npy, linear:C.npy, brockett:A.npy or "
                         f"module:function, got {spec!r}")
    if kind == "tracking":
        return tracking_objective(torch.as_tensor(_load_npy(Path(arg), "objective")), inputs=inputs)
    if kind == "linear":
        return linear_objective(torch.as_tensor(_load_npy(Path(arg), "objective")))
    if kind == "brockett":
        A = torch.as_tensor(_load_npy(Path(arg), "objective"))
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError("objective: brockett needs a square matrix A")
        return brockett_objective(A, torch.diag(torch.arange(1, A.shape[0] + 1, dtype=A.dtype)))
    fn = load_ref(spec, "objective")
    if not callable(fn):
        raise TypeError(f"objective: {spec!r} is not callable")
    return fn


@manifold_app.command("optimize")
@user_errors
def optimize(
    score: Path = typer.Option(..., help="A model saved by `manifold fit-score`."),
    objective: str = typer.Option(..., help="tracking:REF.npy | linear:C.npy | brockett:A.npy | module:function."),
    start: Path = typer.Option(..., help=".npy of candidate starts (e.g. the training data)."),
    out: Path = typer.Option(Path("optimized.npy"), help="Where to write the optimised point(s)."),
    method: str = typer.Option("drgd", help="drgd (feasible) | dlf (landing)."),
    t: float = typer.Option(0.3, help="Noise level of the projector (standardised units)."),
    gamma: float = typer.Option(0.02, help="Step size."),
    steps: int = typer.Option(100, help="Iterations."),
    landing: float = typer.Option(1.0, help="DLF's landing gain."),
    n_proj: int = typer.Option(1, help="Denoiser applications per projection."),
    inputs: int = typer.Option(2, help="tracking: how many leading channels are inputs."),
    all_rows: bool = typer.Option(False, "--all", help="Optimise every row of --start."),
) -> None:
    """Minimise an objective over the data manifold of a trained score (DRGD or DLF)."""
    import torch

    from optiforge import validation as check
    from optiforge.blackbox.manifold import ScoreModel, dlf, drgd

    check.choice(method, "method", METHODS)
    check.integer(steps, "steps", minimum=1, maximum=1_000_000)
    if not score.is_file():
        raise FileNotFoundError(f"score: no such file {str(score)!r}")
    model = ScoreModel.load(score)
    proj = model.projector(check.positive(t, "t"), n_proj=check.integer(n_proj, "n_proj", minimum=1))
    f = _objective(objective, inputs)
    X = torch.as_tensor(_load_npy(start, "start"), dtype=torch.float32)
    cfg = model.net.config
    fits = (X.ndim == 2 and X.shape[1] == cfg["dim"]) if model.kind == "mlp" else \
        (X.ndim == 3 and X.shape[2] == cfg["channels"] and X.shape[1] % 4 == 0)
    if not fits:
        raise ValueError(f"start: shape {tuple(X.shape)} does not fit the {model.kind} score model "
                         f"({cfg})")
    with torch.no_grad():
        values = f(X)
    x0 = X if all_rows else X[int(torch.argmin(values))][None]
    try:
        run = dlf(f, proj, x0, steps, gamma=gamma, landing=landing) if method == "dlf" else \
            drgd(f, proj, x0, steps, gamma=gamma)
    except FloatingPointError as exc:  # a diverging run is bad input (gamma, or a non-finite f)
        raise ValueError(f"gamma: {exc}, or the objective is not finite") from None
    with torch.no_grad():
        final = proj(run.x) if method == "dlf" else run.x
    np.save(out, final.numpy())
    print(json.dumps({"out": str(out), "method": method, "initial_objective": run.values[0],
                      "final_objective": run.values[-1], "final_distance": run.distances[-1],
                      "best_start_objective": float(values.min())}))
