"""``optiforge probe bbp | fractal | cco``: run a training-dynamics probe, write PNG + JSON.

::

    optiforge probe bbp --ns 100,200,400 --trials 4 --out runs/bbp
    optiforge probe fractal --resolution 4096
    optiforge probe cco --a 50 --sweep 1,5,20,50

Each command writes ``<out>/<probe>.png`` and ``<out>/<probe>.json`` (default out:
``probes/<probe>``) and shows a progress bar. The defaults reproduce the papers' figures
(see docs/benchmarks/probes.md for the run times).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from optiforge.platform.cli.errors import user_errors

probe_app = typer.Typer(help="Training-dynamics probes (BBP at init, fractal GD, CCO): PNG + JSON.",
                        no_args_is_help=True)
console = Console(stderr=True)

OUT_HELP = "Output folder (default probes/<probe>)."
DEVICE_HELP = "torch device (cpu, cuda, cuda:1, ...)."


def register(app: typer.Typer) -> None:
    app.add_typer(probe_app, name="probe")


def _floats(text: str, name: str) -> list[float]:
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"{name}: expected comma-separated numbers, got {text!r}") from None
    if not values:
        raise ValueError(f"{name}: expected at least one number")
    return values


def _ints(text: str, name: str) -> list[int]:
    values = _floats(text, name)
    if any(v != int(v) for v in values):
        raise ValueError(f"{name}: expected comma-separated integers, got {text!r}")
    return [int(v) for v in values]


def _device(name: str) -> str:
    import torch

    try:
        dev = torch.device(name)
    except RuntimeError:
        raise ValueError(f"device: not a torch device: {name!r}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {name!r} requested but CUDA is not available")
    return name


def _run(name: str, compute: Callable[[Callable[[int, int], None]], dict],
         draw: Callable[[dict, Path], Path], out: Path | None) -> dict:
    """Run ``compute`` under a progress bar, then write the PNG and the JSON (arrays skipped)."""
    folder = Path(out) if out is not None else Path("probes") / name
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"out: {str(folder)!r} exists and is not a folder")
    start = time.perf_counter()
    columns = (TextColumn(f"[bold]{name}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        handle = bar.add_task(name, total=None)

        def progress(done: int, total: int) -> None:
            bar.update(handle, completed=done, total=total)

        res = compute(progress)
        total = bar.tasks[0].total or 1
        bar.update(handle, completed=total, total=total)  # runs may finish before the budget
    res["wall_s"] = round(time.perf_counter() - start, 1)
    png = draw(res, folder / f"{name}.png")
    numbers = {k: v for k, v in res.items() if not hasattr(v, "dtype")}  # numpy arrays stay out
    path = folder / f"{name}.json"
    path.write_text(json.dumps(numbers, indent=1))
    console.print(f"wrote {png} and {path} ({res['wall_s']} s)")
    return res


@probe_app.command("bbp")
@user_errors
def bbp(
    ns: str = typer.Option("100,200,400,800", help="Input dimensions N (comma-separated)."),
    a: str = typer.Option("0.7,1.5", help="Loss constants a (the paper: 0.7 continuous, 1.5 discontinuous)."),
    alphas: str = typer.Option(",".join(map(str, (round(0.2 * k, 2) for k in range(1, 16)))),
                               help="Samples per dimension α = M/N to sweep."),
    p: int = typer.Option(2, help="Student width p."),
    p_star: int = typer.Option(1, "--p-star", help="Teacher width p*."),
    trials: int = typer.Option(8, help="Independent instances per point."),
    validation_ns: str = typer.Option("200,800", "--validation-ns", help="Ns of the p = 1 theory check."),
    large_ps: str = typer.Option("1,2,4,8", "--large-ps", help="Widths p of the large-p check."),
    large_p_n: int = typer.Option(200, "--large-p-n", help="N of the large-p check."),
    large_p_a: float = typer.Option(1.5, "--large-p-a", help="a of the large-p check."),
    level: float = typer.Option(0.5, help="Overlap level whose crossing α is reported per N."),
    seed: int = typer.Option(0, help="Random seed."),
    device: str = typer.Option("cpu", help=DEVICE_HELP),
    out: Path = typer.Option(None, help=OUT_HELP),
) -> None:
    """BBP transition of the Hessian at initialization (Annesi, Bocchi & Cammarota)."""
    from optiforge.optim.probes import bbp as probe
    from optiforge.optim.probes.plots import plot_bbp

    kw: dict[str, Any] = dict(ns=_ints(ns, "ns"), a_values=_floats(a, "a"),
                              alphas=_floats(alphas, "alphas"), p=p, p_star=p_star, trials=trials,
                              validation_ns=_ints(validation_ns, "validation_ns"), large_ps=_ints(large_ps, "large_ps"),
                              large_p_n=large_p_n, large_p_a=large_p_a, level=level, seed=seed,
                              device=_device(device))
    res = _run("bbp", lambda progress: probe.figure(progress=progress, **kw), plot_bbp, out)
    for t in res["theory"]:
        decay = t.get("below_threshold_decay_exponent")
        console.print(f"a={t['a']}: N=∞ α_BBP p=1 {t['p1']['alpha_bbp']:.3f}, "
                      f"p→∞ {t['p_inf']['alpha_bbp']:.3f} (paper p*(a+1)/2 = "
                      f"{t['p_inf']['paper_alpha_bbp']:.3f})"
                      + (f"; p=1 |m| below α_BBP ∝ N^{decay:.2f}" if decay is not None else ""))


@probe_app.command("fractal")
@user_errors
def fractal(
    y: float = typer.Option(0.5, help="Target y."),
    eta: float = typer.Option(1.0, help="Step size η of the basin map."),
    lam: float = typer.Option(0.2, help="Weight decay λ."),
    extent: float = typer.Option(4.0, help="Grid half-width: u, v in [-extent, extent]."),
    resolution: int = typer.Option(2048, help="Grid points per side."),
    steps: int = typer.Option(100, help="GD steps per grid point."),
    check_inits: int = typer.Option(2000, "--check-inits", help="Initialisations of the η* check."),
    check_steps: int = typer.Option(5000, "--check-steps", help="GD steps of the η* check."),
    rel: float = typer.Option(0.02, help="η* check at (1 ± rel) η*."),
    seed: int = typer.Option(0, help="Random seed."),
    device: str = typer.Option("cpu", help=DEVICE_HELP),
    out: Path = typer.Option(None, help=OUT_HELP),
) -> None:
    """Large-step GD: critical step, planar map, fractal basins (Liang & Montúfar)."""
    from optiforge.optim.probes import fractal as probe
    from optiforge.optim.probes.plots import plot_fractal

    kw: dict[str, Any] = dict(y=y, eta=eta, lam=lam, extent=extent, resolution=resolution,
                              steps=steps, check_inits=check_inits, check_steps=check_steps,
                              check_rel=rel, seed=seed, device=_device(device))
    res = _run("fractal", lambda progress: probe.figure(progress=progress, **kw), plot_fractal,
               out)
    bc = res["box_counting"]["convergence_boundary"]
    c = res["critical_step_check"]
    console.print(f"box-counting dimension of the convergence boundary: {bc['dimension']:.3f} "
                  f"(R² {bc['r2']:.4f}; paper ≈ {res['paper_dimension']})")
    console.print(f"η* check: converged below {c['converged_below']}, diverged above "
                  f"{c['diverged_above']} of {c['count']}")


@probe_app.command("cco")
@user_errors
def cco(
    n: int = typer.Option(64, help="Training samples."),
    d: int = typer.Option(5, help="Feature dimension."),
    a: float = typer.Option(50.0, help="Correlation strength: Var(x_1) of the dominant cause."),
    c: float = typer.Option(0.5, help="Descendant strength: z = c y e_1 + ξ."),
    c_test: float = typer.Option(None, "--c-test", help="Shifted mechanism of the test set (default -c)."),
    sweep: str = typer.Option("1,2,5,10,20,50,100", help="Values of a to sweep."),
    trials: int = typer.Option(8, help="Data sets per setting."),
    eta: float = typer.Option(0.01, help="Step size of the head w."),
    beta: float = typer.Option(0.5, help="Step size of the query v."),
    phase1_max: int = typer.Option(2000, "--phase1-max", help="Cap on phase (i)."),
    t2: int = typer.Option(300, help="Length of phase (ii)."),
    t3: int = typer.Option(3000, help="Length of phase (iii)."),
    seed: int = typer.Option(0, help="Random seed."),
    device: str = typer.Option("cpu", help=DEVICE_HELP),
    out: Path = typer.Option(None, help=OUT_HELP),
) -> None:
    """Correlation crowding-out in two-key attention (Algorithm 1)."""
    from optiforge.optim.probes import cco as probe
    from optiforge.optim.probes.plots import plot_cco

    kw: dict[str, Any] = dict(n=n, d=d, a=a, c=c, c_test=c_test, sweep=_floats(sweep, "sweep"),
                              trials=trials, eta=eta, beta=beta, phase1_max=phase1_max, t2=t2,
                              t3=t3, seed=seed, device=_device(device))
    res = _run("cco", lambda progress: probe.figure(progress=progress, **kw), plot_cco, out)
    run = res["three_phase"]
    console.print(f"a={a}: final mean p_x {sum(run['p_x'][-1]) / len(run['p_x'][-1]):.3f}, "
                  f"shifted test loss {sorted(run['test_loss_shifted'][-1])[len(run['p_x'][-1]) // 2]:.3f} "
                  f"(σ²/2 = {res['noise_floor']})")
