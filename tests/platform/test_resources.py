"""A campaign process's thread and allocator budget."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from optiforge.platform import resources


def test_thread_budget_reads_the_environment(monkeypatch):
    monkeypatch.delenv("OPTIFORGE_THREADS", raising=False)
    assert resources.thread_budget() == max(1, len(os.sched_getaffinity(0)) // 2)
    monkeypatch.setenv("OPTIFORGE_THREADS", "3")
    assert resources.thread_budget() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("OPTIFORGE_THREADS", bad)
        with pytest.raises(ValueError, match="^OPTIFORGE_THREADS:"):
            resources.thread_budget()


def test_apply_budget_in_a_fresh_process():
    # A fresh interpreter: OpenMP reads its variables once, when torch loads it.
    code = ("import os; from optiforge.platform import resources as r; n = r.apply_budget(); "
            "import torch; r.release_free_memory(); "
            "print(n, os.environ['OMP_NUM_THREADS'], os.environ['OMP_WAIT_POLICY'], torch.get_num_threads())")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    env["OPTIFORGE_THREADS"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "1", "passive", "1"]
    env["OMP_NUM_THREADS"] = "2"  # the user's explicit choice wins
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split()[:2] == ["2", "2"]
    with pytest.raises(ValueError, match="^threads:"):
        resources.apply_budget(0)
