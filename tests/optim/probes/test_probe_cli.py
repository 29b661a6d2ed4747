"""``optiforge probe ...``: tiny runs write a PNG and a JSON; bad options exit 2 in one line."""

import json

import pytest
from typer.testing import CliRunner

from optiforge.platform.cli.main import app

TINY = {
    "bbp": ["--ns", "20,30,40", "--alphas", "0.5,2", "--trials", "2", "--validation-ns", "30,40",
            "--large-ps", "1,2", "--large-p-n", "20"],
    "fractal": ["--resolution", "64", "--check-inits", "20", "--check-steps", "200"],
    "cco": ["--sweep", "1,50", "--trials", "2", "--phase1-max", "200", "--t2", "50", "--t3", "100"],
}


def run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("name", list(TINY))
def test_probe_writes_png_and_json(name, tmp_path):
    out = tmp_path / name
    r = run("probe", name, *TINY[name], "--out", str(out))
    assert r.exit_code == 0, r.output
    png = (out / f"{name}.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    numbers = json.loads((out / f"{name}.json").read_text())
    assert numbers["wall_s"] >= 0 and "config" in numbers
    assert "classes" not in numbers  # the raw basin map stays out of the JSON


@pytest.mark.parametrize("args, message", [
    (["bbp", "--ns", "10,x"], "error: ns: expected comma-separated numbers"),
    (["bbp", "--ns", "1,2"], "error: n: must be >= 2"),
    (["fractal", "--resolution", "4"], "error: resolution: must be >= 8"),
    (["fractal", "--device", "nonsense"], "error: device:"),
    (["cco", "--trials", "0"], "error: trials: must be >= 1"),
    (["cco", "--eta", "-1"], "error: eta: must be > 0"),
])
def test_bad_options_exit_2_with_one_line(args, message, tmp_path):
    r = run("probe", *args, "--out", str(tmp_path / "x"))
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output
