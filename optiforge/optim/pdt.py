"""PDT, Predictive Differential Training: DMD predictions of the weights around any optimizer."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.optim import Optimizer

from optiforge import validation as check

MASKS = ("code", "paper", "none")
MODES = ("projected", "exact")
SVDS = ("auto", "exact", "randomized")


def optimal_rank(singular_values: torch.Tensor, shape: tuple[int, int]) -> int:
    """Gavish--Donoho optimal hard threshold for an ``m x n`` matrix with unknown noise level.

    Keeps the singular values above ``omega(beta) * median(s)`` with ``beta = min(m, n) /
    max(m, n)`` and ``omega(beta) ~= 0.56 beta^3 - 0.95 beta^2 + 1.82 beta + 1.43`` (the same
    rule as ``svd_rank=0`` in PyDMD and in the PDT code); at least one is kept.

    References
    ----------
    .. [1] M. Gavish, D. L. Donoho, "The Optimal Hard Threshold for Singular Values is
       4/sqrt(3)", IEEE Trans. Inf. Theory 60(8), 2014.
    """
    m, n = shape
    beta = min(m, n) / max(m, n)
    omega = 0.56 * beta**3 - 0.95 * beta**2 + 1.82 * beta + 1.43
    tau = omega * float(singular_values.median())
    return max(1, int((singular_values > tau).sum()))


@dataclass
class DMD:
    """A fitted DMD model ``w_{k+1} ~= A w_k`` of a snapshot sequence.

    ``A`` is represented by its rank-``r`` reduction ``A_tilde = U^T Y V S^-1`` (``X = U S V^T``
    the truncated SVD of the first ``m - 1`` snapshots, ``Y`` the last ``m - 1``), its
    eigenvalues ``eigs`` (``Lambda``) and modes ``modes`` (``Phi``).
    """

    basis: torch.Tensor  # U, (P, r)
    atilde: torch.Tensor  # (r, r)
    eigs: torch.Tensor  # (r,) complex
    modes: torch.Tensor  # (P, r) complex
    kind: str

    @property
    def rank(self) -> int:
        return int(self.atilde.shape[0])

    def displacements(self, x: torch.Tensor, steps: int) -> list[torch.Tensor]:
        """``Re{Phi (Lambda^k - I) Phi^+ x}`` for ``k = 1..steps`` (each shaped like ``x``).

        For projected modes (``Phi = U W``, ``A_tilde = W Lambda W^-1``) this equals
        ``U (A_tilde^k - I) U^T x``, computed in real arithmetic without the eigenvectors.
        """
        x = x.to(self.basis.dtype)
        out = []
        if self.kind == "projected":
            c = self.basis.T @ x
            ck = c
            for _ in range(steps):
                ck = self.atilde @ ck
                out.append(self.basis @ (ck - c))
            return out
        b = torch.linalg.lstsq(self.modes, x.to(self.modes.dtype).unsqueeze(1)).solution.squeeze(1)
        lam = torch.ones_like(self.eigs)
        for _ in range(steps):
            lam = lam * self.eigs
            out.append((self.modes @ ((lam - 1) * b)).real)
        return out

    def predict(self, x: torch.Tensor, steps: int) -> torch.Tensor:
        """The state ``steps`` steps after ``x``: ``x + Re{Phi (Lambda^steps - I) Phi^+ x}``."""
        return x.to(self.basis.dtype) + self.displacements(x, steps)[-1]


def dmd(snapshots: torch.Tensor, rank: int = 0, *, modes: str = "projected", svd: str = "exact") -> DMD:
    """Fit DMD to the columns of ``snapshots`` (``P x m``, consecutive states, ``m >= 2``).

    Parameters
    ----------
    snapshots : torch.Tensor
        States as columns, oldest first. The fit runs in the tensor's dtype and device.
    rank : int
        SVD truncation: ``0`` the optimal hard threshold (:func:`optimal_rank`), ``-1`` every
        numerically non-zero singular value, ``k > 0`` at most ``k``.
    modes : {"projected", "exact"}
        ``Phi = U W`` (Schmid 2010; the PDT code's default) or ``Phi = Y V S^-1 W`` (Tu et al.
        2014's exact DMD).
    svd : {"exact", "randomized"}
        Thin LAPACK SVD, or the randomized range finder (``torch.svd_lowrank`` with ``m - 1``
        columns and two power iterations, which is exact at that rank up to rounding).

    Returns
    -------
    DMD
    """
    if snapshots.ndim != 2 or snapshots.shape[1] < 2:
        raise ValueError(f"snapshots: expected a (P, m) matrix with m >= 2, got {tuple(snapshots.shape)}")
    check.choice(modes, "modes", MODES)
    check.choice(svd, "svd", SVDS[1:])
    x, y = snapshots[:, :-1], snapshots[:, 1:]
    if svd == "randomized":
        u, s, v = torch.svd_lowrank(x, q=min(x.shape), niter=2)
    else:
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        v = vh.mT
    # Singular values at rounding level carry no dynamics: never divide by them.
    keep = int((s > s[0] * max(x.shape) * torch.finfo(s.dtype).eps).sum()) if s[0] > 0 else 0
    if keep == 0:
        raise ValueError("snapshots: all states equal zero; nothing to fit")
    r = keep if rank == -1 else min(keep, optimal_rank(s[:keep], tuple(x.shape)) if rank == 0 else rank)
    u, s, v = u[:, :r], s[:r], v[:, :r]
    yv_s = (y @ v) / s
    atilde = u.T @ yv_s
    eigs, w = torch.linalg.eig(atilde)
    cplx = eigs.dtype
    phi = (u.to(cplx) @ w) if modes == "projected" else yv_s.to(cplx) @ w
    return DMD(basis=u, atilde=atilde, eigs=eigs, modes=phi, kind=modes)


class PDT:
    """Predictive Differential Training: periodic DMD predictions of the weights, masked per coordinate.

    Wraps any ``torch.optim.Optimizer``; call :meth:`step` as usual and :meth:`epoch_end` at the
    end of every epoch (any fixed period of steps). A snapshot of the flattened weights is kept
    at the start of every epoch (the last ``window`` on ``snapshot_device``). From the epoch in
    which ``burn_in`` snapshots exist, every ``interval`` epochs, at the epoch's end:

    1. ``w_ref`` = the weights at the epoch's start (the newest snapshot), ``w_sgd`` = now,
       ``Delta = w_sgd - w_ref`` (the optimizer's own epoch update);
    2. DMD on the last ``window`` snapshots, rank by the optimal hard threshold, gives
       ``D_k = Re{Phi (Lambda^k - I) Phi^+ w_ref}`` (the predicted displacement ``k`` epochs on)
       and ``w_pred = w_ref + D_tau``;
    3. per coordinate, the prediction is kept where it is dynamically consistent and effective::

           mask="code":  sign(D_tau) == sign(Delta)  and  |Delta| <= |D_tau| <= (tau + 1) |Delta|
           mask="paper": sign(D_k) == sign(Delta) for k = 1..tau  and  |Delta| <= |D_tau| <= tau |Delta|

    4. ``w <- where(mask, w_pred, w_sgd)``.

    With ``adaptive=True`` and the epoch's training loss passed to :meth:`epoch_end`, the
    acceleration scheduler shortens ``tau`` or lengthens ``interval`` when the loss rises.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        The base optimizer (SGD, AdamW, Muon...); its state is left untouched by a prediction.
    burn_in : int
        ``T_0``: snapshots needed before the first prediction (>= 2; default 5, the code's).
    window : int
        ``h``: snapshots used by DMD (>= 2; default 5).
    horizon : int
        ``tau``: epochs predicted ahead (default 5).
    interval : int
        Epochs between predictions (default 1).
    svd_rank : int
        DMD truncation (``0``: optimal hard threshold, the default; ``-1``: none; ``k``: fixed).
    mask : {"code", "paper", "none"}
        The per-coordinate acceptance rule above (``"none"`` accepts every prediction, an
        ablation).
    modes : {"projected", "exact"}
        DMD modes (see :func:`dmd`); the code's default is ``"projected"``.
    adaptive : bool
        Apply the acceleration scheduler (needs ``epoch_end(loss)``).
    snapshot_device : str or torch.device
        Where the snapshots live and DMD runs (default CPU, so accelerator memory holds none).
    svd : {"auto", "exact", "randomized"}
        ``"auto"``: exact thin SVD in float64 up to ``randomized_above`` snapshot entries, the
        randomized SVD in float32 above.
    randomized_above : int
        Threshold of ``"auto"`` on ``P * window``.

    Notes
    -----
    Implements the authors' code (``aicip/PDT``) where the paper and the code differ, by
    default: ``mask="code"`` checks the sign of the final displacement only and bounds it by
    ``(tau + 1) |Delta|`` (inclusive lower bound); ``mask="paper"`` is the paper's statement
    (signs at every intermediate step, bound ``tau``). Both displacements are measured from
    ``w_ref``, and the prediction adds the predicted displacement to ``w_ref`` (the code's
    ``x + Phi (Lambda^tau - I) Phi^+ x``), so the DMD reconstruction error of ``w_ref`` does not
    enter. The acceleration scheduler's rule is not in the paper; ``adaptive=True`` follows the
    code's adaptive trainer: once two earlier losses are known, a loss above the previous
    epoch's *and* the one before it lowers ``tau`` by 2 when ``tau > 4`` (at ``tau = 4``: ``tau``
    by 1 and ``interval`` up by 1; below: ``interval`` up by 2); a loss above the previous one
    only lowers ``tau`` by 1 when ``tau > 3``, else raises ``interval`` by 1. A prediction
    does not reset the base optimizer's moments (neither does the code).

    References
    ----------
    .. [1] Wang, Tang, Harris, Qi, Wilson, Mezić, "Predictive Differential Training Guided by
       Training Dynamics", ICLR 2026, OpenReview zSTgrLkpRi; code github.com/aicip/PDT.
    .. [2] P. J. Schmid, "Dynamic mode decomposition of numerical and experimental data",
       J. Fluid Mech. 656, 2010; J. H. Tu et al., "On dynamic mode decomposition: theory and
       applications", J. Comput. Dyn. 1(2), 2014.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        *,
        burn_in: int = 5,
        window: int = 5,
        horizon: int = 5,
        interval: int = 1,
        svd_rank: int = 0,
        mask: str = "code",
        modes: str = "projected",
        adaptive: bool = False,
        snapshot_device: str | torch.device = "cpu",
        svd: str = "auto",
        randomized_above: int = 50_000_000,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer: expected a torch.optim.Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        self.burn_in = check.integer(burn_in, "burn_in", minimum=2)
        self.window = check.integer(window, "window", minimum=2)
        self.horizon = check.integer(horizon, "horizon", minimum=1)
        self.interval = check.integer(interval, "interval", minimum=1)
        self.svd_rank = check.integer(svd_rank, "svd_rank", minimum=-1)
        self.mask = check.choice(mask, "mask", MASKS)
        self.modes = check.choice(modes, "modes", MODES)
        self.adaptive = check.boolean(adaptive, "adaptive")
        self.svd = check.choice(svd, "svd", SVDS)
        self.randomized_above = check.integer(randomized_above, "randomized_above", minimum=1)
        try:
            self.snapshot_device = torch.device(snapshot_device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"snapshot_device: {exc}") from None
        self._params = [p for g in optimizer.param_groups for p in g["params"]]
        if not self._params:
            raise ValueError("optimizer: has no parameters")
        # Snapshots in float32 (float64 when every parameter is float64).
        self._dtype = torch.float64 if all(p.dtype == torch.float64 for p in self._params) else torch.float32
        self._snapshots: deque[torch.Tensor] = deque(maxlen=self.window)
        self._epoch_start: torch.Tensor | None = None
        self.epochs = 0
        self._since_prediction: int | None = None  # None until the first prediction is due
        self._losses: list[float] = []
        self.history: list[dict[str, float]] = []

    # ------------------------------------------------------------------ the optimizer face
    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups

    @property
    def state(self) -> Any:
        return self.optimizer.state

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure: Callable[[], float] | None = None) -> Any:
        """One step of the base optimizer (the epoch's start is recorded on its first step)."""
        if self._epoch_start is None:
            self._begin_epoch()
        return self.optimizer.step(closure)

    # ------------------------------------------------------------------ snapshots
    @torch.no_grad()
    def _flat(self) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1).to(self.snapshot_device, self._dtype) for p in self._params])

    @torch.no_grad()
    def _write(self, flat: torch.Tensor) -> None:
        offset = 0
        for p in self._params:
            n = p.numel()
            p.copy_(flat[offset : offset + n].view_as(p).to(p.device, p.dtype))
            offset += n

    def _begin_epoch(self) -> None:
        self._epoch_start = self._flat()
        self._snapshots.append(self._epoch_start)

    # ------------------------------------------------------------------ the epoch boundary
    @torch.no_grad()
    def epoch_end(self, loss: float | None = None) -> dict[str, float] | None:
        """Close an epoch: predict when one is due; update the scheduler from ``loss``.

        Parameters
        ----------
        loss : float, optional
            The epoch's mean training loss (used by ``adaptive=True`` only).

        Returns
        -------
        dict or None
            On a prediction epoch: ``epoch``, ``rank`` (DMD rank), ``accepted`` (share of
            coordinates that took the prediction), ``horizon``, ``interval``, ``seconds``.
        """
        if loss is not None:
            loss = check.finite(loss, "loss")
        if self._epoch_start is None:  # an epoch without steps still counts
            self._begin_epoch()
        self.epochs += 1
        stats = None
        if len(self._snapshots) >= self.burn_in:
            if self._since_prediction is None:
                self._since_prediction = self.interval  # the first prediction is due at once
            if self._since_prediction >= self.interval:
                stats = self._predict()
                self._since_prediction = 1
            else:
                self._since_prediction += 1
        self._epoch_start = None
        if loss is not None:
            self._losses = (self._losses + [loss])[-3:]
            if self.adaptive:
                self._schedule()
        return stats

    def _predict(self) -> dict[str, float]:
        t0 = time.perf_counter()
        w_ref = self._epoch_start
        assert w_ref is not None
        w_sgd = self._flat()
        delta = w_sgd - w_ref
        snaps = torch.stack(list(self._snapshots), dim=1)
        if not bool(torch.isfinite(snaps).all()):  # the base optimizer diverged: nothing to fit
            stats = {"epoch": float(self.epochs), "rank": 0.0, "accepted": 0.0, "horizon": float(self.horizon),
                     "interval": float(self.interval), "seconds": time.perf_counter() - t0}
            self.history.append(stats)
            return stats
        svd = self.svd
        if svd == "auto":
            svd = "exact" if snaps.numel() <= self.randomized_above else "randomized"
        if svd == "exact":
            snaps = snaps.double()
        model = dmd(snaps, self.svd_rank, modes=self.modes, svd=svd)
        disp = model.displacements(w_ref, self.horizon)
        d_tau = disp[-1].to(self._dtype)
        if self.mask == "none":
            accept = torch.isfinite(d_tau)  # a non-finite prediction is never taken
        else:
            sign = torch.sign(delta)
            steps = disp if self.mask == "paper" else [d_tau]
            accept = torch.ones_like(delta, dtype=torch.bool)
            for d in steps:
                accept &= torch.sign(d.to(self._dtype)) == sign
            bound = self.horizon + 1 if self.mask == "code" else self.horizon
            accept &= (d_tau.abs() >= delta.abs()) & (d_tau.abs() <= bound * delta.abs())
        self._write(torch.where(accept, w_ref + d_tau, w_sgd))
        stats = {"epoch": float(self.epochs), "rank": float(model.rank),
                 "accepted": float(accept.float().mean()), "horizon": float(self.horizon),
                 "interval": float(self.interval), "seconds": time.perf_counter() - t0}
        self.history.append(stats)
        return stats

    def _schedule(self) -> None:
        if len(self._losses) < 3:
            return
        before, prev, now = self._losses
        if now <= prev:
            return
        if now > before:  # rose twice: act harder
            if self.horizon > 4:
                self.horizon -= 2
            elif self.horizon == 4:
                self.horizon -= 1
                self.interval += 1
            else:
                self.interval += 2
        elif self.horizon > 3:
            self.horizon -= 1
        else:
            self.interval += 1

    # ------------------------------------------------------------------ resume
    def state_dict(self) -> dict[str, Any]:
        """Base optimizer state, snapshots, counters and the scheduler's ``tau`` / interval."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "snapshots": [s.clone() for s in self._snapshots],
            "epoch_open": self._epoch_start is not None,  # the newest snapshot is its start
            "epochs": self.epochs, "since_prediction": self._since_prediction,
            "horizon": self.horizon, "interval": self.interval, "losses": list(self._losses),
            "history": [dict(h) for h in self.history],
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved (same parameters, same order)."""
        if not isinstance(state_dict, dict) or "snapshots" not in state_dict:
            raise ValueError("state_dict: not a PDT state (no 'snapshots')")
        size = sum(p.numel() for p in self._params)
        for s in state_dict["snapshots"]:
            if s.numel() != size:
                raise ValueError(f"state_dict: snapshots hold {s.numel()} weights, this model has {size}")
        self.optimizer.load_state_dict(state_dict["optimizer"])
        self._snapshots = deque((s.to(self.snapshot_device) for s in state_dict["snapshots"]),
                                maxlen=self.window)
        self._epoch_start = self._snapshots[-1] if state_dict["epoch_open"] and self._snapshots else None
        self.epochs = int(state_dict["epochs"])
        self._since_prediction = state_dict["since_prediction"]
        self.horizon = int(state_dict["horizon"])
        self.interval = int(state_dict["interval"])
        self._losses = [float(v) for v in state_dict["losses"]]
        self.history = [dict(h) for h in state_dict["history"]]
