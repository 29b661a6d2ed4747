"""``optiforge train decentralized | federated``: JSON + PNG, --json figures, bad input exits 2."""

import json

import pytest
from typer.testing import CliRunner

from optiforge.platform.cli.main import app

TINY = ["--agents", "4", "--hidden", "8", "--rounds", "4", "--eval-every", "2"]


def run(*args: str):
    return CliRunner().invoke(app, ["train", *args])


def test_decentralized_writes_curves_and_plot(tmp_path):
    out = tmp_path / "d"
    r = run("decentralized", *TINY, "--data", "synthetic", "--schedule", "late", "--budget", "0.25",
            "--out", str(out), "--json")
    assert r.exit_code == 0, r.output
    figures = json.loads(r.stdout)
    [final] = figures["final"].values()
    assert 0 <= final["merged_acc"] <= 1 and final["bits"] > 0
    assert (out / "decentralized.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((out / "decentralized.json").read_text())
    [run_] = report["runs"]
    assert run_["curves"]["round"] == [0, 2, 4] and len(run_["curves"]["comm"]) == 4
    assert run_["config"]["schedule"]["windows"]["placement"] == "late"
    r = run("decentralized", *TINY, "--out", str(out))  # the folder holds files now
    assert r.exit_code == 2 and "--force" in r.output


def test_federated_compares_methods(tmp_path):
    out = tmp_path / "f"
    r = run("federated", *TINY, "-m", "adi", "-m", "diana", "--a", "2", "--compressor", "natural",
            "--participation", "0.5", "--out", str(out), "--json")
    assert r.exit_code == 0, r.output
    figures = json.loads(r.stdout)
    assert set(figures["final"]) == {"adi", "diana"}
    assert all(f["bits_up"] > 0 and 0 <= f["accuracy"] <= 1 for f in figures["final"].values())
    assert (out / "federated.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = run("federated", *TINY, "-m", "ef21", "--compressor", "topk", "--out", str(tmp_path / "t"))
    assert table.exit_code == 0 and "ef21" in table.stdout and "wrote" in table.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["decentralized", "--agents", "0"], "error: agents: must be >= 1"),
    (["decentralized", "--schedule", "middle"], "error: schedule: must be one of"),
    (["decentralized", "--topology", "graph"], "error: graph: give --graph FILE"),
    (["decentralized", "--r", "2"], "error: r: must be in [0, 1]"),
    (["decentralized", "--engine", "mpi"], "error: engine: must be one of local, ray"),
    (["decentralized", "--hidden", "8,x"], "error: hidden: expected comma-separated integers"),
    (["federated", "-m", "adam"], "error: method: must be one of"),
    (["federated", "-m", "adi", "--compressor", "topk"], "error: compressor: ADI needs an unbiased"),
    (["federated", "--alpha", "0"], "error: alpha: must be > 0"),
    (["federated", "--a", "40"], "error: a: must be <= agents"),
    (["federated", "--data", "mnist"], "error: data: must be one of digits, synthetic"),
])
def test_bad_input_exits_2_in_one_line(args, message, tmp_path):
    r = run(*args, "--out", str(tmp_path / "x"))
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
    assert len([ln for ln in r.output.splitlines() if ln.strip()]) == 1


def test_graph_topology_from_a_file(tmp_path):
    adj = tmp_path / "g.json"
    adj.write_text(json.dumps([[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]]))
    r = run("decentralized", *TINY, "--topology", "graph", "--graph", str(adj), "--merge", "none",
            "--out", str(tmp_path / "g"), "--json")
    assert r.exit_code == 0, r.output
    [final] = json.loads(r.stdout)["final"].values()
    assert final["bits"] == 4 * 32 * 8 * (64 * 8 + 8 + 8 * 10 + 10)  # 8 directed edges a round
    bad = tmp_path / "bad.json"
    bad.write_text("[[0, 1], [1, 0]]")
    r = run("decentralized", *TINY, "--topology", "graph", "--graph", str(bad), "--out", str(tmp_path / "b"))
    assert r.exit_code == 2 and "graph: has 2 nodes for 4 agents" in r.output
