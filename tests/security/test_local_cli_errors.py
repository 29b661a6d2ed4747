"""Bad input to the CLI: one ``error: ...`` line naming what was wrong, exit 2, no traceback.

Each case was a traceback (exit 1), a multi-megabyte message or a runaway process start before;
all run the real ``optiforge`` command in a subprocess against a real store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from local_security_helpers import assert_one_error_line, cli_env, run_cli

SPACE = '{"x": {"type": "float", "low": 0, "high": 1}}'
DEEP = "[" * 50_000 + "]" * 50_000  # fits in one argument (128 KiB), far past json's recursion limit


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return cli_env(tmp_path_factory.mktemp("cli-errors") / "home")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("cli-error-files")
    (root / "latin1.py").write_bytes(b"def priority(item, bins):\n    return '\xff\xfe'\n")
    (root / "latin1.json").write_bytes(b'{"x": "\xff"}')
    (root / "good.py").write_text("def priority(item, bins):\n    return -(bins - item)\n")
    (root / "folder").mkdir()
    (root / "a_file").write_text("x")
    return {p.name: str(p) for p in root.iterdir()}


@pytest.fixture(scope="module")
def study_id(env: dict[str, str]) -> str:
    r = run_cli(env, "study", "create", "--space", SPACE)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["id"]


def _fill(arg: str, names: dict[str, str]) -> str:
    for placeholder, value in names.items():
        arg = arg.replace(placeholder, value)
    return arg


CASES = {
    # name: (argv with <placeholders>, the word the message must contain)
    "space_deep_json": (["study", "create", "--space", DEEP], "space"),
    "options_deep_json": (["study", "create", "--space", SPACE, "--options", DEEP], "options"),
    "campaign_options_deep_json": (["campaign", "run", "--task", "ackley-2", "--agent", "hollm",
                                    "--budget", "2", "--options", DEEP], "options"),
    "space_file_not_utf8": (["study", "create", "--space", "@<latin1.json>"], "space"),
    "space_file_is_a_folder": (["study", "create", "--space", "@<folder>"], "is a folder"),
    "space_file_is_a_device": (["study", "create", "--space", "@/dev/null"], "not a regular file"),
    "tell_trial_id_2_63": (["study", "tell", "<study>", str(2**63), "--value", "1"], "trial_id"),
    "tell_trial_id_huge": (["study", "tell", "<study>", "9" * 400, "--value", "1"], "trial_id"),
    "ask_n_huge": (["study", "ask", "<study>", "--n", "9" * 400], "n"),
    "campaign_budget_huge": (["campaign", "run", "--task", "binpacking", "--budget", "9" * 30], "budget"),
    "campaign_workers_huge": (["campaign", "run", "--task", "binpacking", "--budget", "2",
                               "--workers", "9" * 30], "workers"),
    "campaign_rl_every_zero": (["campaign", "run", "--task", "binpacking", "--budget", "2",
                                "--llm", "replay:<good.py>", "--rl-every", "0"], "rl_every"),
    "evaluate_program_not_utf8": (["evaluate", "--task", "binpacking", "--program", "<latin1.py>"],
                                  "program"),
    "evaluate_program_is_a_folder": (["evaluate", "--task", "binpacking", "--program", "<folder>"],
                                     "program: '<folder>' is a folder"),
    "evaluate_program_is_a_device": (["evaluate", "--task", "binpacking", "--program", "/dev/null"],
                                     "program: '/dev/null' is not a regular file"),
    "evaluate_timeout_huge": (["evaluate", "--task", "binpacking", "--program", "<good.py>",
                               "--timeout", "1e300"], "timeout"),
    "evaluate_timeout_nan": (["evaluate", "--task", "binpacking", "--program", "<good.py>",
                              "--timeout", "nan"], "timeout"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line(env, files, study_id, case: str) -> None:
    argv, word = CASES[case]
    names = {"<study>": study_id, **{f"<{name}>": path for name, path in files.items()}}
    argv = [_fill(a, names) for a in argv]
    assert_one_error_line(run_cli(env, *argv), _fill(word, names))


@pytest.mark.parametrize("home", ["a_file", "under_a_file", "/proc/optiforge-home"])
def test_unusable_home_is_one_line(env, files, home: str) -> None:
    path = {"a_file": files["a_file"], "under_a_file": files["a_file"] + "/home"}.get(home, home)
    r = run_cli({**env, "OPTIFORGE_HOME": path}, "study", "list")
    assert_one_error_line(r, "OPTIFORGE_HOME")
    assert Path(files["a_file"]).read_text() == "x"


def test_error_echoing_huge_input_is_capped(env) -> None:
    # A 100 KB categorical choice is quoted back by the space check; the line stays short.
    space = json.dumps({"x": {"type": "categorical", "choices": [[["y" * 100_000]]]}})
    line = assert_one_error_line(run_cli(env, "study", "create", "--space", space), "space")
    assert len(line) <= 600


def test_shared_home_warns_in_one_plain_line(tmp_path: Path, env) -> None:
    home = tmp_path / "shared"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    r = run_cli({**env, "OPTIFORGE_HOME": str(home)}, "study", "list")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("warning: ") and str(home) in lines[0], r.stderr
