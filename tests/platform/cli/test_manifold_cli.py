"""`optiforge manifold ...` and `optiforge study create --agent zo-riemannian` from the shell."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from optiforge.platform.cli.main import app


@pytest.fixture
def db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("OPTIFORGE_DB", url)
    return url


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_data_fit_score_optimize_end_to_end(tmp_path, monkeypatch):
    data, score, out = tmp_path / "circle.npy", tmp_path / "s.pt", tmp_path / "x.npy"
    r = run("manifold", "data", "--synthetic", "circle", "--n", 512, "--out", data)
    assert r.exit_code == 0, r.output
    r = run("manifold", "fit-score", "--data", data, "--out", score, "--steps", 60, "--width", 16,
            "--sigma-min", 0.05, "--sigma-max", 2.0)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output.strip().splitlines()[-1])["kind"] == "mlp"
    c = tmp_path / "c.npy"
    np.save(c, np.array([0.6, 0.8]))
    r = run("manifold", "optimize", "--score", score, "--objective", f"linear:{c}", "--start", data,
            "--t", 0.2, "--steps", 5, "--gamma", 0.05, "--out", out)
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    assert np.load(out).shape == (1, 2) and np.isfinite(res["final_objective"])
    # a run that diverges (here: an objective that is NaN) is one error line, not a traceback
    (tmp_path / "nan_objective.py").write_text("def f(x):\n    return x.sum(dim=1) * float('nan')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    r = run("manifold", "optimize", "--score", score, "--objective", "nan_objective:f", "--start", data,
            "--t", 0.2, "--steps", 5, "--out", out)
    assert r.exit_code == 2 and "error: gamma:" in r.output and "Traceback" not in r.output, r.output
    traj = tmp_path / "traj.npy"
    r = run("manifold", "data", "--system", "unicycle", "--n", 3, "--length", 8, "--out", traj)
    assert r.exit_code == 0 and np.load(traj).shape == (3, 8, 4)


def test_study_create_with_zo_riemannian_and_a_manifold_space(db, tmp_path):
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"w": {"type": "simplex", "dim": 3}, "u": {"type": "sphere", "dim": 2}}))
    r = run("study", "create", "--space", f"@{space}", "--agent", "zo-riemannian", "--seed", 1)
    assert r.exit_code == 0, r.output
    sid = json.loads(r.output)["id"]
    trials = json.loads(run("study", "ask", sid, "--n", 2).output)["trials"]
    assert len(trials) == 2 and abs(sum(trials[0]["params"]["w"]) - 1) < 1e-9


@pytest.mark.parametrize(("args", "needle"), [
    (("study", "create", "--space", '{"w": {"type": "simplex", "dim": 1}}', "--agent", "zo-riemannian"),
     "space.w.dim: must be >= 2"),
    (("study", "create", "--space", '{"w": {"type": "simplex", "dim": 3}}'),
     "space.w: the hollm agent searches box parameters"),
    (("manifold", "fit-score", "--data", "/nonexistent.npy"), "data: no such file"),
    (("manifold", "data", "--out", "x.npy"), "give exactly one of --system or --synthetic"),
    (("manifold", "data", "--system", "bicycle", "--out", "x.npy"), "system: must be one of"),
])
def test_bad_input_is_one_line_and_exit_2(db, args, needle):
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output
    assert len([ln for ln in r.output.splitlines() if ln.strip()]) == 1


def test_optimize_with_a_bad_score_file_in_a_real_process(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"junk")
    start = tmp_path / "s.npy"
    np.save(start, np.zeros((2, 2)))
    r = subprocess.run([sys.executable, "-m", "optiforge.platform.cli", "manifold", "optimize",
                        "--score", str(bad), "--objective", "linear:x.npy", "--start", str(start)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.startswith("error: score:") and "Traceback" not in r.stderr
