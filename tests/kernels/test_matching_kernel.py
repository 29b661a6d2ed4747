"""The push-relabel slack scan: Triton (interpreter on CPU) equals the torch fallback bit for bit,
and the fallback means what its docstring says."""

import pytest
import torch

from optiforge.kernels import slack_scan
from optiforge.kernels.matching import EMPTY, INVISIBLE, unpack

pytest.importorskip("triton")


def _case(m: int, n: int, levels: int, f: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dhat = torch.randint(0, 60, (m, n), generator=g, dtype=torch.int32)
    offset = -torch.randint(0, 8, (levels, n), generator=g, dtype=torch.int32)
    offset[torch.rand(levels, n, generator=g) < 0.3] = INVISIBLE
    rows = torch.randperm(m, generator=g)[:f]
    levels_ = torch.randint(0, levels, (f,), generator=g)
    free = torch.rand(n, generator=g) < 0.4
    blocked = torch.rand(n, generator=g) < 0.2
    return [t.to(dev) for t in (dhat, rows, rows * 3 + 1, levels_, offset, free, blocked)]


@pytest.mark.parametrize(("m", "n", "levels", "f"), [(30, 2500, 4, 20), (5, 7, 1, 5), (12, 1024, 9, 1)])
@pytest.mark.parametrize("use_blocked", [False, True])
@pytest.mark.parametrize("seed", [987_654_321, 1])  # 1: a value compiled Triton specialises
def test_triton_equals_torch(m, n, levels, f, use_blocked, seed):
    dhat, rows, ids, lv, offset, free, blocked = _case(m, n, levels, f, seed=m + n)
    kw = dict(seed=seed, blocked=blocked if use_blocked else None)
    got = slack_scan(dhat, rows, ids, lv, offset, free, backend="triton", **kw)
    want = slack_scan(dhat, rows, ids, lv, offset, free, backend="torch", **kw)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_fallback_semantics():
    dhat, rows, ids, lv, offset, free, blocked = _case(8, 300, 3, 8, seed=1)
    best, second = slack_scan(dhat, rows, ids, lv, offset, free, blocked=blocked, backend="torch")
    t_min, server = unpack(best)
    t = dhat[rows].long() - offset[lv].long()
    t[:, blocked] = 2**40
    for k in range(len(rows)):
        assert t_min[k] == t[k].min()
        ties = (t[k] == t[k].min()).nonzero().flatten()
        assert server[k] in ties
        if free[ties].any():  # a free server is preferred among tied admissible ones
            assert free[server[k]]
        others = torch.cat([t[k, : server[k]], t[k, server[k] + 1:]])
        assert second[k] >> 32 == others.min()


def test_all_blocked_rows_are_empty_and_inputs_are_checked():
    dhat, rows, ids, lv, offset, free, _ = _case(4, 10, 2, 3, seed=2)
    best, _ = slack_scan(dhat, rows, ids, lv, offset, free, blocked=torch.ones(10, dtype=torch.bool, device=dhat.device))
    assert torch.all(best == EMPTY) and torch.all(unpack(best)[1] == -1)
    with pytest.raises(TypeError, match="dhat must be torch.int32"):
        slack_scan(dhat.long(), rows, ids, lv, offset, free)
    with pytest.raises(ValueError, match="offset must be"):
        slack_scan(dhat, rows, ids, lv, offset[:, :5], free)
