"""LMask's policy: an attention-model encoder-decoder with the refinement-intensity embedding.

The encoder (Kool et al. [2]_) embeds each node (TSPTW: ``x, y, e_i / u_0, l_i / u_0``, the
depot ``x, y`` through its own linear map; TSPDL: ``x, y, demand, draft``) and applies ``L``
layers of multi-head attention and a feed-forward block, each with a skip connection and
instance normalisation. The decoder's context at step ``t`` is the embedding of the current
node and the resource (``t / u_0`` or the load), concatenated with the **RIE** of LMask [1]_:
one-hot(refinement count of the step, clamped to 5 classes), one-hot(budget reached),
one-hot(the partial tour already violates a constraint); a glimpse (multi-head attention
over the nodes, masked) and a single-head pointer with ``10 tanh`` clipping give the logits.

The policy acts as a chooser of the LazyMask decoder (:mod:`.lazymask`); the decoder owns
masks and backtracking, the policy records the log-probability of each step's choice in a
``(B, n)`` buffer indexed by the step, so a popped step is overwritten when it is decided again
(as LMask's per-step stacks).

Deviation from [1]_: no ``torch.compile`` or RL4CO; the decoder state lives in numpy (see
:mod:`.lazymask`). Defaults follow the paper: 6 layers, 128 dims, 8 heads, FF 512.

References
----------
.. [1] T. Li, H. Zou, J. Wu, Z. Wen, "Learn to Solve Constrained Routing Problems with Lazy
   Masking", ICLR 2026, arXiv:2505.17938 (section 4.3, RIE; code ``TSPTWRIEContext``).
.. [2] W. Kool, H. van Hoof, M. Welling, "Attention, Learn to Solve Routing Problems!",
   ICLR 2019.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from optiforge.heuristics.routing import lazymask as lm
from optiforge.heuristics.routing.instances import RoutingInstances

RIE_COUNT_CLASSES = 5


@dataclass(frozen=True)
class PolicyConfig:
    """Architecture (defaults: LMask's)."""

    problem: str = "tsptw"
    embed_dim: int = 128
    layers: int = 6
    heads: int = 8
    ff_dim: int = 512
    rie: bool = True


def node_features(instances: RoutingInstances, coords: np.ndarray | None = None) -> np.ndarray:
    """``(B, n, 4)`` node features (``coords`` overrides the instances', for augmentation)."""
    xy = instances.coords if coords is None else coords
    if instances.problem == "tsptw":
        scale = instances.tw_end[:, :1]
        extra = np.stack([instances.tw_start / scale, instances.tw_end / scale], axis=-1)
    else:
        extra = np.stack([instances.demand, instances.draft], axis=-1)
    return np.concatenate([xy, extra], axis=-1).astype(np.float32)


def dihedral8(coords: np.ndarray) -> list[np.ndarray]:
    """The 8 symmetries of the unit square applied to ``(..., 2)`` coordinates (POMO's augmentation)."""
    x, y = coords[..., 0], coords[..., 1]
    pairs = [(x, y), (y, x), (x, 1 - y), (y, 1 - x), (1 - x, y), (1 - y, x), (1 - x, 1 - y), (1 - y, 1 - x)]
    return [np.stack(p, axis=-1) for p in pairs]


class _Layer(nn.Module):
    def __init__(self, dim: int, heads: int, ff: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.ReLU(), nn.Linear(ff, dim))
        self.norm1 = nn.InstanceNorm1d(dim, affine=True)
        self.norm2 = nn.InstanceNorm1d(dim, affine=True)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = self.norm1((h + self.attn(h, h, h, need_weights=False)[0]).transpose(1, 2)).transpose(1, 2)
        return self.norm2((h + self.ff(h)).transpose(1, 2)).transpose(1, 2)


class RoutingPolicy(nn.Module):
    """The attention model with LMask's RIE context (see the module docstring)."""

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__()
        self.config = config
        d = config.embed_dim
        self.embed = nn.Linear(4, d)
        self.embed_depot = nn.Linear(2, d)
        self.layers = nn.ModuleList(_Layer(d, config.heads, config.ff_dim) for _ in range(config.layers))
        rie = (RIE_COUNT_CLASSES + 2 + 2) if config.rie else 0
        self.context = nn.Linear(d + 1 + rie, d)
        self.glimpse = nn.MultiheadAttention(d, config.heads, batch_first=True)
        self.keys = nn.Linear(d, d, bias=False)

    def encode(self, features: torch.Tensor) -> torch.Tensor:
        """``(B, n, d)`` node embeddings."""
        h = self.embed(features)
        h = torch.cat([self.embed_depot(features[:, :1, :2]), h[:, 1:]], dim=1)
        for layer in self.layers:
            h = layer(h)
        return h

    def logits(self, h: torch.Tensor, d: lm.Decision, resource_scale: torch.Tensor) -> torch.Tensor:
        """``(k, n)`` logits of the rows of decision ``d`` (masked entries ``-inf``)."""
        rows = torch.as_tensor(d.rows)
        hk = h[rows]
        cur = hk[torch.arange(rows.numel()), torch.as_tensor(d.current)]
        parts = [cur, (torch.as_tensor(d.resource, dtype=h.dtype) / resource_scale[rows])[:, None]]
        if self.config.rie:
            count = torch.as_tensor(np.minimum(d.refinements, RIE_COUNT_CLASSES - 1))
            parts += [nn.functional.one_hot(count, RIE_COUNT_CLASSES).to(h.dtype),
                      nn.functional.one_hot(torch.as_tensor(d.budget_reached).long(), 2).to(h.dtype),
                      nn.functional.one_hot(torch.as_tensor(d.violated).long(), 2).to(h.dtype)]
        query = self.context(torch.cat(parts, dim=1))[:, None, :]
        mask = torch.as_tensor(d.mask)
        glimpse = self.glimpse(query, hk, hk, key_padding_mask=~mask, need_weights=False)[0]
        scores = (self.keys(hk) @ glimpse.transpose(1, 2)).squeeze(2) / hk.shape[-1] ** 0.5
        return (10.0 * torch.tanh(scores)).masked_fill(~mask, float("-inf"))


class PolicyChooser:
    """Runs a :class:`RoutingPolicy` as a LazyMask chooser, recording log-probs and entropies.

    Parameters
    ----------
    policy : RoutingPolicy
        The network.
    instances : RoutingInstances
        The batch being decoded.
    sample : bool
        Sample from the policy (training) or take the argmax (greedy test decoding).
    coords : numpy.ndarray, optional
        Transformed coordinates the policy sees (dihedral augmentation).
    generator : torch.Generator, optional
        Sampling randomness.
    """

    def __init__(self, policy: RoutingPolicy, instances: RoutingInstances, *, sample: bool,
                 coords: np.ndarray | None = None, generator: torch.Generator | None = None) -> None:
        self.policy, self.sample, self.generator = policy, sample, generator
        device = next(policy.parameters()).device
        feats = torch.as_tensor(node_features(instances, coords), device=device)
        self.h = policy.encode(feats).cpu()
        scale = instances.tw_end[:, 0] if instances.problem == "tsptw" else np.ones(instances.size)
        self.scale = torch.as_tensor(scale, dtype=self.h.dtype)
        self.logp = torch.zeros(instances.size, instances.n)
        self.entropy = torch.zeros(instances.size, instances.n)

    def __call__(self, d: lm.Decision) -> np.ndarray:
        logits = self.policy.logits(self.h, d, self.scale)
        logp_all = torch.log_softmax(logits, dim=1)
        if self.sample:
            action = torch.multinomial(logp_all.exp().detach(), 1, generator=self.generator).squeeze(1)
        else:
            action = logp_all.argmax(dim=1)
        k = torch.arange(action.numel())
        rows, steps = torch.as_tensor(d.rows), torch.as_tensor(d.step)
        probs = logp_all.exp()
        ent = -(probs * logp_all.masked_fill(probs == 0, 0.0)).sum(dim=1)
        # Non in-place writes keep autograd's history; a later write to the same (row, step)
        # (after a backtrack) replaces the popped choice's log-prob.
        self.logp = self.logp.index_put((rows, steps), logp_all[k, action])
        self.entropy = self.entropy.index_put((rows, steps), ent)
        return action.numpy().astype(np.int64)


def kernel_mask(instances: RoutingInstances, device: str | torch.device = "cpu") -> lm.MaskFn:
    """LazyMask's lookahead-2 mask through :func:`optiforge.kernels.lookahead2_mask` (Triton on CUDA).

    The instance arrays are moved to ``device`` once; each call ships only the state.
    """
    from optiforge.kernels import lookahead2_mask

    if instances.problem == "tsptw":
        travel = torch.as_tensor(instances.distances(), device=device)
        start = torch.as_tensor(instances.tw_start, device=device)
        end = torch.as_tensor(instances.tw_end, device=device)
    else:
        demand = torch.as_tensor(instances.demand, device=device)
        travel = demand[:, None, :].expand(-1, instances.n, -1)
        start = torch.zeros_like(demand)
        end = torch.as_tensor(instances.draft, device=device)

    def mask(rows: np.ndarray, current: np.ndarray, resource: np.ndarray, unvisited: np.ndarray,
             pending: np.ndarray) -> np.ndarray:
        r = torch.as_tensor(rows, device=device)
        out = lookahead2_mask(travel[r], start[r], end[r], torch.as_tensor(current, device=device),
                              torch.as_tensor(resource, device=device),
                              torch.as_tensor(unvisited, device=device), torch.as_tensor(pending, device=device))
        return out.cpu().numpy()

    return mask


def save_policy(policy: RoutingPolicy, path: str | Path, **extra: object) -> None:
    """Write the weights, the config and ``extra`` (training state) to ``path``."""
    torch.save({"config": asdict(policy.config), "state_dict": policy.state_dict(), **extra}, path)


def load_policy(path: str | Path, problem: str | None = None, device: str | None = None) -> RoutingPolicy:
    """Read a policy written by :func:`save_policy`.

    Raises
    ------
    ValueError
        If the file is missing or not a routing policy, or it was trained for another problem.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"model: no such file {str(path)!r}")
    try:
        blob = torch.load(path, map_location=device or "cpu", weights_only=True)
        config = PolicyConfig(**blob["config"])
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise ValueError(f"model: {str(path)!r} is not a routing policy checkpoint ({exc})") from exc
    if problem is not None and config.problem != problem:
        raise ValueError(f"model: {str(path)!r} was trained for {config.problem}, not {problem}")
    policy = RoutingPolicy(config)
    policy.load_state_dict(blob["state_dict"])
    return policy.to(device or "cpu").eval()


@torch.no_grad()
def evaluate_policy(path: Path, instances: RoutingInstances, *, backtracking: bool = True,
                    budget: float | None = 600, device: str | None = None,
                    augment: bool = True) -> tuple[list[np.ndarray], np.ndarray]:
    """Greedy decoding with x8 dihedral augmentation: one ``(B, n)`` tour array per augmentation.

    ``backtracking=False`` is the PIP-like ablation: lookahead-2 masks, no backtracking (R = 0).
    Returns the tours and the instances proven infeasible (by any augmentation).
    """
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    policy = load_policy(path, instances.problem, device)
    # The mask kernel pays off on a GPU; on a CPU numpy's own mask avoids the copies.
    mask_fn = kernel_mask(instances, device) if device.startswith("cuda") else None
    variants = dihedral8(instances.coords) if augment else [instances.coords]
    tours, proven = [], np.zeros(instances.size, dtype=bool)
    for coords in variants:
        chooser = PolicyChooser(policy, instances, sample=False, coords=coords)
        result = lm.decode(instances, chooser, lookahead=2, budget=budget if backtracking else 0,
                           mask_fn=mask_fn)
        tours.append(result.tours)
        proven |= result.proven_infeasible
    return tours, proven
