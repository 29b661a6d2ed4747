"""DEFT: a mixture-of-experts scheduling policy with a graph-adaptive gate (torch).

Per decision (one ready task, ``C`` candidate VMs) the policy embeds the state as GATES'
state-embedding module (SEM) does [2]_, scores every candidate with an expert, and takes the
best::

    task MLP          4 task features (children, workflow completion, 2 arrival rates) -> 16
    VM encoder        6 features per candidate -> 16 -> 2-layer Transformer over the candidates
    DAG GAT           2 GAT layers (2 heads) over the ready task's workflow -> mean + ready node
    star GAT          2 GAT layers over the star graph {ready task} + candidates
    embedding         [VM enc, star VM, task, DAG mean, DAG ready, star task] = 96 per candidate
    expert (PMM)      MLP 96 -> 128 -> 128 -> 1 priority per candidate
    gate              ``graph``: its own DAG encoder (2 GAT layers, 32 x 2 heads, pooled to 16);
                      query = Linear([mean VM emb 96, DAG 16, ready-task 10, gamma]) -> 128,
                      2-head attention over 4 learnable expert tokens; the attention weights
                      are the expert logits; ``linear`` / ``mlp``: the ablations' gates on the
                      same 123-d input.
    routing           top-1: one expert for all candidates of the step; argmax over its scores

``experts=1, gate=None`` is the single-expert GATES policy. Parameters are trained by
evolution strategies (:mod:`.train`), so nothing here needs gradients.

Deviations: the GAT layers are a small dense implementation (Velickovic et al. [3]_, eq. 1-4)
in plain torch, not torch_geometric (the graphs have at most a few hundred nodes); the VM
features add the VM's vCPUs and a new-VM flag to GATES' four (meets the sub-deadline, extra
cost incl. the estimated SLA penalty, paid time left, best fit), so that the six new-VM rows
are distinguishable.

References
----------
.. [1] Y. Shen, G. Chen, H. Ma, M. Zhang, "Deft Scheduling of Dynamic Cloud Workflows with Varying
   Deadlines via Mixture-of-Experts", ICLR 2026 (arXiv 2606.01162).
.. [2] Y. Shen, G. Chen, H. Ma, M. Zhang, "GATES: Cost-aware dynamic workflow scheduling via
   graph attention networks and evolution strategy", IJCAI 2025 (arXiv 2505.12355).
.. [3] P. Velickovic et al., "Graph Attention Networks", ICLR 2018.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from optiforge.heuristics.scheduling.simulator import COL, GATES_PENALTY, Decision, SLAPenalty

GATES = ("graph", "linear", "mlp")
D = 16
EMB = 6 * D  # 96
N_NODE_FEATURES = 6
N_TASK_FEATURES = 4
N_VM_FEATURES = 6


@dataclass(frozen=True)
class DeftConfig:
    """Shape of a DEFT policy.

    Parameters
    ----------
    experts : int
        Number of experts (DEFT: 4; GATES: 1).
    gate : str or None
        ``"graph"`` (DEFT), ``"linear"`` or ``"mlp"`` (ablations); ``None`` with one expert.
    """

    experts: int = 4
    gate: str | None = "graph"

    def __post_init__(self) -> None:
        if isinstance(self.experts, bool) or not isinstance(self.experts, int) or self.experts < 1:
            raise ValueError(f"experts: must be an integer >= 1, got {self.experts!r}")
        if self.experts > 1 and self.gate not in GATES:
            raise ValueError(f"gate: must be one of {', '.join(GATES)} with several experts, got {self.gate!r}")
        if self.experts == 1 and self.gate is not None:
            raise ValueError("gate: a single expert has no gate (use gate=None)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class GATLayer(nn.Module):
    """Dense graph attention (GAT) layer: ``heads`` attention heads, concatenated or averaged."""

    def __init__(self, n_in: int, n_out: int, heads: int = 2, concat: bool = True) -> None:
        super().__init__()
        self.heads, self.n_out, self.concat = heads, n_out, concat
        self.lin = nn.Linear(n_in, heads * n_out, bias=False)
        self.att_src = nn.Parameter(torch.randn(heads, n_out) * 0.1)
        self.att_dst = nn.Parameter(torch.randn(heads, n_out) * 0.1)
        self.bias = nn.Parameter(torch.zeros(heads * n_out if concat else n_out))

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        """``x``: (n, n_in); ``adj``: (n, n) bool, True where j sends to i (self loops included)."""
        h = self.lin(x).view(-1, self.heads, self.n_out)                       # (n, H, F)
        e = (h * self.att_dst).sum(-1).T[:, :, None] + (h * self.att_src).sum(-1).T[:, None, :]
        e = nn.functional.leaky_relu(e, 0.2).masked_fill(~adj, float("-inf"))  # (H, n_i, n_j)
        out = torch.einsum("hij,jhf->ihf", torch.softmax(e, dim=-1), h)
        out = out.reshape(-1, self.heads * self.n_out) if self.concat else out.mean(1)
        return out + self.bias


class _GATStack(nn.Module):
    def __init__(self, n_in: int, hidden: int, n_out: int, heads: int = 2) -> None:
        super().__init__()
        self.l1 = GATLayer(n_in, hidden, heads, concat=True)
        self.l2 = GATLayer(hidden * heads, n_out, heads, concat=False)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        return self.l2(nn.functional.elu(self.l1(x, adj)), adj)


def _mlp(*sizes: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), nn.Tanh()]
    return nn.Sequential(*layers[:-1])


class GraphGate(nn.Module):
    """DEFT's graph-adaptive cross-attention gate: a query from the state attends to expert tokens."""

    def __init__(self, experts: int) -> None:
        super().__init__()
        self.dag = _GATStack(N_NODE_FEATURES, 32, 32, heads=2)
        self.pool = nn.Linear(32, D)
        self.query = nn.Linear(EMB + D + 10 + 1, 128)
        self.tokens = nn.Parameter(torch.randn(experts, 128) * 0.1)
        self.attn = nn.MultiheadAttention(128, 2, batch_first=True)

    def forward(self, g: torch.Tensor, nodes: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        dag = self.pool(self.dag(nodes, adj).mean(0))
        q = self.query(torch.cat([g, dag]))[None, None]
        kv = self.tokens[None]
        _, weights = self.attn(q, kv, kv, need_weights=True, average_attn_weights=True)
        return weights[0, 0]


class VectorGate(nn.Module):
    """The ablations' gates: a linear map or an MLP from the same state summary to expert logits."""

    def __init__(self, experts: int, hidden: int | None) -> None:
        super().__init__()
        n_in = EMB + 10 + 1
        self.net = nn.Linear(n_in, experts) if hidden is None else _mlp(n_in, hidden, experts)

    def forward(self, g: torch.Tensor, nodes: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        return self.net(g)


class DeftPolicy(nn.Module):
    """DEFT (or, with one expert, GATES) as a scheduling :class:`~.simulator.Policy`.

    Parameters
    ----------
    config : DeftConfig
        Number of experts and gate kind.
    penalty : SLAPenalty
        Rule used for the extra-cost feature's estimated SLA penalty.
    seed : int
        Seed of the initial parameters.
    """

    def __init__(self, config: DeftConfig | None = None, penalty: SLAPenalty = GATES_PENALTY,
                 seed: int = 0) -> None:
        super().__init__()
        self.config = config or DeftConfig()
        self.penalty = penalty
        torch.manual_seed(seed)
        self.task_mlp = _mlp(N_TASK_FEATURES, D, D)
        self.vm_in = nn.Linear(N_VM_FEATURES, D)
        layer = nn.TransformerEncoderLayer(D, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.vm_encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.dag_gat = _GATStack(N_NODE_FEATURES, D, D)
        self.star_gat = _GATStack(D, D, D)
        self.experts = nn.ModuleList([_mlp(EMB, 128, 128, 1) for _ in range(self.config.experts)])
        gate = self.config.gate
        self.gate: nn.Module | None = (
            None if gate is None else GraphGate(self.config.experts) if gate == "graph"
            else VectorGate(self.config.experts, None if gate == "linear" else 64))
        self.eval()
        self.expert_counts = np.zeros(self.config.experts, dtype=np.int64)
        self._adj_cache: dict[int, tuple[Any, torch.Tensor]] = {}

    # -- features ---------------------------------------------------------------------------
    def _adjacency(self, decision: Decision) -> torch.Tensor:
        wf = decision.workflow
        cached = self._adj_cache.get(id(wf))
        if cached is not None and cached[0] is wf:
            return cached[1]
        a = np.eye(wf.n_tasks, dtype=bool)
        a[wf.edges[:, 0], wf.edges[:, 1]] = True
        a[wf.edges[:, 1], wf.edges[:, 0]] = True  # messages both ways along the DAG
        adj = torch.from_numpy(a)
        self._adj_cache[id(wf)] = (wf, adj)  # the reference keeps id(wf) from being reused
        return adj

    def features(self, d: Decision) -> tuple[torch.Tensor, ...]:
        wf, now = d.workflow, d.now
        arrivals = d.arrivals
        recent = arrivals[-5:]
        rate_recent = 100.0 * (len(recent) - 1) / max(recent[-1] - recent[0], 1.0) if len(recent) > 1 else 1.0
        rate_all = 100.0 * len(arrivals) / max(now, 1.0)
        task = np.array([np.log1p(d.task[3]), d.task[4], rate_recent, rate_all], dtype=np.float32)
        v = d.vms
        meets = (v[:, COL["slack"]] >= 0).astype(np.float32)
        extra = v[:, COL["extra_cost"]] + self.penalty(-v[:, COL["slack"]])
        best = (extra <= extra.min() + 1e-9).astype(np.float32)
        vms = np.stack([meets, extra, v[:, COL["remaining_paid"]] / 3600.0, best,
                        v[:, COL["vcpus"]] / 48.0, v[:, COL["is_new"]]], axis=1).astype(np.float32)
        indeg = np.array([len(p) for p in wf.parents], dtype=np.float32)
        outdeg = np.array([len(c) for c in wf.children], dtype=np.float32)
        flag = d.finished.astype(np.float32)
        flag[d.task_index] = 2.0
        nodes = np.stack([indeg, outdeg, np.log1p(wf.work / 48.0) / 5.0, np.full(wf.n_tasks, wf.n_tasks / 100.0),
                          np.clip((d.sub_deadlines - now) / 3600.0, -5, 5), flag], axis=1).astype(np.float32)
        return (torch.from_numpy(task), torch.from_numpy(vms), torch.from_numpy(nodes), self._adjacency(d),
                torch.tensor([d.task[5]], dtype=torch.float32))

    # -- forward -----------------------------------------------------------------------------
    @torch.inference_mode()
    def scores(self, d: Decision) -> tuple[torch.Tensor, int]:
        """Priorities of every candidate under the chosen expert, and that expert's index."""
        task, vms, nodes, adj, gamma = self.features(d)
        c = vms.shape[0]
        t = self.task_mlp(task)
        v = self.vm_encoder(self.vm_in(vms)[None])[0]
        dag = self.dag_gat(nodes, adj)
        dag_mean, dag_ready = dag.mean(0), dag[d.task_index]
        star_x = torch.cat([(t + dag_ready)[None], v])
        star = torch.zeros(c + 1, c + 1, dtype=torch.bool)
        star[0, :] = star[:, 0] = True
        star.fill_diagonal_(True)
        s = self.star_gat(star_x, star)
        emb = torch.cat([v, s[1:], t.expand(c, D), dag_mean.expand(c, D), dag_ready.expand(c, D),
                         s[0].expand(c, D)], dim=1)
        k = 0
        if self.gate is not None:
            summary = torch.cat([emb.mean(0), nodes[d.task_index], task, gamma])
            k = int(torch.argmax(self.gate(summary, nodes, adj)))  # top-1 routing
        return self.experts[k](emb)[:, 0], k

    def __call__(self, decision: Decision) -> int:  # type: ignore[override]
        scores, k = self.scores(decision)
        self.expert_counts[k] += 1
        return int(torch.argmax(scores))

    # -- flat parameters (evolution strategies) ---------------------------------------------
    def get_flat(self) -> np.ndarray:
        return torch.nn.utils.parameters_to_vector(self.parameters()).detach().numpy().astype(np.float32)

    def set_flat(self, flat: np.ndarray) -> None:
        vec = torch.as_tensor(np.asarray(flat, dtype=np.float32))
        n = sum(p.numel() for p in self.parameters())
        if vec.ndim != 1 or vec.numel() != n:
            raise ValueError(f"flat: expected {n} parameters, got shape {tuple(vec.shape)}")
        torch.nn.utils.vector_to_parameters(vec, self.parameters())

    def save(self, path: str) -> None:
        """Write the policy (config + parameters) to ``path`` (a ``torch.save`` file)."""
        torch.save({"format": "optiforge-deft-1", "config": self.config.to_dict(),
                    "state": self.state_dict()}, path)


def load_policy(path: str, penalty: SLAPenalty = GATES_PENALTY) -> DeftPolicy:
    """Load a policy written by :meth:`DeftPolicy.save` (or a training checkpoint).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If it is not a DEFT policy file.
    """
    import os

    if not os.path.isfile(path):
        raise FileNotFoundError(f"model: no such file {path!r}")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise ValueError(f"model: {path!r} is not a DEFT policy file ({type(exc).__name__})") from None
    if not isinstance(blob, dict) or blob.get("format") != "optiforge-deft-1":
        raise ValueError(f"model: {path!r} is not a DEFT policy file")
    policy = DeftPolicy(DeftConfig(**blob["config"]), penalty=penalty)
    policy.load_state_dict(blob["state"])
    return policy
