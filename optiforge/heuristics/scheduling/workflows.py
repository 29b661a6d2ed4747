"""Scientific workflow DAGs: CyberShake, Montage, Inspiral (LIGO) and SIPHT, plus a WfFormat loader.

The generators rebuild the four Pegasus workflows from their published structure (Bharathi et
al. [1]_, figures 1-5) and the per-job runtime characterisation (mean seconds per job type,
Juve et al. [2]_, which profiles the same applications):

* **CyberShake**: ``ExtractSGT`` (roots) -> ``SeismogramSynthesis`` (fan-out) -> ``ZipSeis``
  (join) and, per seismogram, ``PeakValCalcOkaya`` -> ``ZipPSA`` (join).
* **Montage**: ``mProjectPP`` -> ``mDiffFit`` (each on two overlapping projections) ->
  ``mConcatFit`` -> ``mBgModel`` -> ``mBackground`` (one per projection, also after its
  projection) -> ``mImgtbl`` -> ``mAdd`` -> ``mShrink`` -> ``mJPEG``.
* **Inspiral**: per group, ``TmpltBank`` -> ``Inspiral`` -> ``Thinca`` (join) -> ``TrigBank``
  (fan-out) -> ``Inspiral`` -> ``Thinca`` (join).
* **SIPHT**: per unit, ``Patser`` jobs -> ``Patser_concate``; ``Transterm``, ``Findterm``,
  ``RNAMotif``, ``Blast`` -> ``SRNA`` -> ``FFN_Parse`` -> ``Blast_synteny``, and ``SRNA`` ->
  ``Blast_candidate``, ``Blast_QRNA``, ``Blast_paralogues`` -> ``SRNA_annotate`` (also after
  ``Patser_concate``).

Deviation: the Pegasus generator samples each job's runtime from a distribution fitted to
traces; we draw it from a gamma distribution (coefficient of variation 0.25) around the job
type's mean, with a fixed seed per (type, size), so a workflow of one type and size is one
fixed DAG, as the DAX files DEFT uses are. Data transfer times are not modelled (DEFT's
simulator schedules on compute time only).

References
----------
.. [1] S. Bharathi, A. Chervenak, E. Deelman, G. Mehta, M.-H. Su, K. Vahi, "Characterization of
   scientific workflows", 3rd Workshop on Workflows in Support of Large-Scale Science, 2008.
.. [2] G. Juve, A. Chervenak, E. Deelman, S. Bharathi, G. Mehta, K. Vahi, "Characterizing and
   profiling scientific workflows", Future Generation Computer Systems 29(3), 2013.
.. [3] WfCommons, "WfFormat" JSON schema, https://github.com/wfcommons/wfformat.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

WORKFLOW_TYPES = ("cybershake", "montage", "inspiral", "sipht")
SCALES: dict[str, dict[str, int]] = {
    "S": {"cybershake": 30, "montage": 25, "inspiral": 30, "sipht": 30},
    "M": {"cybershake": 50, "montage": 50, "inspiral": 50, "sipht": 60},
    "L": {"cybershake": 100, "montage": 100, "inspiral": 100, "sipht": 100},
}
"""Task counts of each workflow type per scale (DEFT / GATES)."""

WORK_FACTOR = 16.0
"""Task work (vCPU-seconds) = characterised runtime x 16, as in GATES: on a 16-vCPU VM a task
runs for its characterised runtime."""

RUNTIME_MEANS: dict[str, dict[str, float]] = {
    "cybershake": {"ExtractSGT": 110.58, "SeismogramSynthesis": 79.47, "ZipSeis": 265.73,
                   "PeakValCalcOkaya": 0.55, "ZipPSA": 195.80},
    "montage": {"mProjectPP": 1.73, "mDiffFit": 0.66, "mConcatFit": 143.26, "mBgModel": 384.49,
                "mBackground": 1.72, "mImgtbl": 2.78, "mAdd": 282.37, "mShrink": 66.10,
                "mJPEG": 0.64},
    "inspiral": {"TmpltBank": 18.14, "Inspiral": 460.24, "Thinca": 5.37, "TrigBank": 5.11},
    "sipht": {"Patser": 0.96, "Patser_concate": 0.03, "Transterm": 32.41, "Findterm": 594.94,
              "RNAMotif": 25.69, "Blast": 3311.12, "SRNA": 12.44, "FFN_Parse": 0.73,
              "Blast_synteny": 3.37, "Blast_candidate": 0.60, "Blast_QRNA": 440.88,
              "Blast_paralogues": 0.68, "SRNA_annotate": 0.14},
}
"""Mean runtime in seconds per job type (Juve et al. 2013, table 2 / Bharathi et al. 2008)."""

RUNTIME_CV = 0.25


@dataclass(frozen=True)
class Workflow:
    """One workflow DAG with task work and the precomputed arrays the simulator needs.

    Attributes
    ----------
    name : str
        e.g. ``"montage_25"``.
    work : np.ndarray
        Work per task in vCPU-seconds (runtime on a 1-vCPU VM), shape ``(n,)``.
    kinds : tuple of str
        Job type of each task.
    edges : np.ndarray
        ``(m, 2)`` int array of (parent, child) pairs.
    """

    name: str
    work: np.ndarray
    kinds: tuple[str, ...]
    edges: np.ndarray
    parents: list[np.ndarray] = field(init=False, repr=False)
    children: list[np.ndarray] = field(init=False, repr=False)
    upward_rank: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Plain Kahn's algorithm: the sandbox loads this module, and it imports numpy only.
        n = len(self.work)
        edges = np.unique(self.edges.reshape(-1, 2), axis=0)
        if len(edges) and (edges.min() < 0 or edges.max() >= n):
            raise ValueError(f"workflow {self.name!r}: an edge names a task outside 0..{n - 1}")
        parents = [edges[edges[:, 1] == i, 0] for i in range(n)]
        children = [edges[edges[:, 0] == i, 1] for i in range(n)]
        indegree = np.array([len(p) for p in parents])
        order = [i for i in range(n) if indegree[i] == 0]
        for i in order:  # grows while it is walked
            for c in children[i]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    order.append(int(c))
        if len(order) != n:
            raise ValueError(f"workflow {self.name!r}: the task graph has a cycle")
        rank = np.zeros(n)
        for i in reversed(order):
            rank[i] = self.work[i] + (rank[children[i]].max() if len(children[i]) else 0.0)
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "children", children)
        object.__setattr__(self, "upward_rank", rank)

    @property
    def n_tasks(self) -> int:
        return len(self.work)

    @property
    def critical_work(self) -> float:
        """Node-weighted critical path in vCPU-seconds (divide by a VM's vCPUs for seconds)."""
        return float(self.upward_rank.max())

    def to_networkx(self) -> Any:
        """The DAG as a ``networkx.DiGraph`` with ``work`` and ``kind`` node attributes."""
        import networkx as nx

        graph = nx.DiGraph()
        for i in range(self.n_tasks):
            graph.add_node(i, work=float(self.work[i]), kind=self.kinds[i])
        graph.add_edges_from(map(tuple, self.edges.tolist()))
        return graph


class _Builder:
    def __init__(self, kind: str, rng: np.random.Generator) -> None:
        self.kind, self.rng = kind, rng
        self.kinds: list[str] = []
        self.runtimes: list[float] = []
        self.edges: list[tuple[int, int]] = []

    def add(self, job: str, parents: list[int] = ()) -> int:  # type: ignore[assignment]
        mean = RUNTIME_MEANS[self.kind][job]
        shape = 1.0 / RUNTIME_CV**2
        self.kinds.append(job)
        self.runtimes.append(float(self.rng.gamma(shape, mean / shape)))
        i = len(self.kinds) - 1
        self.edges += [(p, i) for p in parents]
        return i

    def build(self, name: str) -> Workflow:
        return Workflow(name=name, work=np.asarray(self.runtimes) * WORK_FACTOR, kinds=tuple(self.kinds),
                        edges=np.asarray(self.edges, dtype=np.int64).reshape(-1, 2))


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _cybershake(b: _Builder, n: int) -> None:
    # n = e + 2 s + 2: e ExtractSGT roots, s seismograms each with one peak-value job.
    e = max(1, round((n - 2) / 14))
    s = (n - 2 - e) // 2
    e = n - 2 - 2 * s
    sgts = [b.add("ExtractSGT") for _ in range(e)]
    seis = [b.add("SeismogramSynthesis", [sgts[k % e]]) for k in range(s)]
    b.add("ZipSeis", seis)
    peaks = [b.add("PeakValCalcOkaya", [j]) for j in seis]
    b.add("ZipPSA", peaks)


def _montage(b: _Builder, n: int) -> None:
    # n = 2 p + d + 6 with about two overlaps (mDiffFit) per projection.
    layouts = [(abs(n - 6 - 4 * p), p) for p in range(2, n) if 1 <= n - 6 - 2 * p <= p * (p - 1) // 2]
    if not layouts:
        raise ValueError(f"size: no Montage layout (2 p + d + 6 tasks, 1 <= d <= p(p-1)/2) has {n} tasks")
    p = min(layouts)[1]
    d = n - 6 - 2 * p
    proj = [b.add("mProjectPP") for _ in range(p)]
    pairs = [(i, i + 1) for i in range(p - 1)] + [(i, i + 2) for i in range(p - 2)]
    pairs += [(i, j) for i in range(p) for j in range(i + 3, p)]
    diffs = [b.add("mDiffFit", [proj[i], proj[j]]) for i, j in pairs[:d]]
    concat = b.add("mConcatFit", diffs)
    model = b.add("mBgModel", [concat])
    backs = [b.add("mBackground", [model, proj[i]]) for i in range(p)]
    tbl = b.add("mImgtbl", backs)
    add = b.add("mAdd", [tbl])
    shrink = b.add("mShrink", [add])
    b.add("mJPEG", [shrink])


def _inspiral(b: _Builder, n: int) -> None:
    # n = 4 K + 2 g: g groups, K template banks over all groups.
    g = max(1, round(n / 25))
    while (n - 2 * g) % 4 and g > 1:
        g -= 1
    if (n - 2 * g) % 4:
        raise ValueError(f"size: an Inspiral workflow has 4K + 2g tasks (an even number), got {n}")
    for k in _split((n - 2 * g) // 4, g):
        banks = [b.add("TmpltBank") for _ in range(k)]
        first = [b.add("Inspiral", [t]) for t in banks]
        thinca = b.add("Thinca", first)
        trig = [b.add("TrigBank", [thinca]) for _ in range(k)]
        second = [b.add("Inspiral", [t]) for t in trig]
        b.add("Thinca", second)


def _sipht(b: _Builder, n: int) -> None:
    # One unit = Patser jobs + 12 fixed jobs; about 18 Patser jobs per unit, as in Sipht_30.
    units = max(1, round(n / 30))
    for p in _split(n - 12 * units, units):
        patsers = [b.add("Patser") for _ in range(p)]
        concate = b.add("Patser_concate", patsers)
        roots = [b.add(job) for job in ("Transterm", "Findterm", "RNAMotif", "Blast")]
        srna = b.add("SRNA", roots)
        ffn = b.add("FFN_Parse", [srna])
        syn = b.add("Blast_synteny", [ffn])
        blasts = [b.add(job, [srna]) for job in ("Blast_candidate", "Blast_QRNA", "Blast_paralogues")]
        b.add("SRNA_annotate", [syn, *blasts, concate])


_GENERATORS = {"cybershake": (_cybershake, 8), "montage": (_montage, 11), "inspiral": (_inspiral, 6),
               "sipht": (_sipht, 14)}


def generate_workflow(kind: str, size: int, seed: int = 0) -> Workflow:
    """Build a ``kind`` workflow of ``size`` tasks.

    Parameters
    ----------
    kind : str
        ``"cybershake"``, ``"montage"``, ``"inspiral"`` or ``"sipht"``.
    size : int
        Number of tasks (at least 8, 11, 6 and 14 respectively).
    seed : int
        Seed of the runtimes.

    Returns
    -------
    Workflow

    Raises
    ------
    ValueError
        If ``kind`` is unknown or ``size`` too small for its structure.
    """
    if kind not in _GENERATORS:
        raise ValueError(f"kind: unknown workflow type {kind!r}; choose one of {', '.join(WORKFLOW_TYPES)}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"size: expected int, got {type(size).__name__}")
    build, minimum = _GENERATORS[kind]
    if size < minimum:
        raise ValueError(f"size: a {kind} workflow needs at least {minimum} tasks, got {size}")
    b = _Builder(kind, np.random.default_rng([WORKFLOW_TYPES.index(kind), int(size), int(seed)]))
    build(b, int(size))
    wf = b.build(f"{kind}_{size}")
    assert wf.n_tasks == size, (kind, size, wf.n_tasks)
    return wf


_TEMPLATES: dict[tuple[str, int], Workflow] = {}


def template(kind: str, size: int) -> Workflow:
    """The fixed (seed 0) ``kind`` workflow of ``size`` tasks, cached per process (a DAX file)."""
    key = (kind, int(size))
    if key not in _TEMPLATES:
        _TEMPLATES[key] = generate_workflow(kind, size, seed=0)
    return _TEMPLATES[key]


def load_wfformat(path: str | Path | dict[str, Any]) -> Workflow:
    """Load a WfFormat (WfCommons) JSON trace as a :class:`Workflow`.

    Reads ``workflow.tasks`` (schema 1.4: ``workflow.specification.tasks`` with runtimes in
    ``workflow.execution.tasks``). A task's work is its ``runtimeInSeconds`` (or ``runtime``)
    x :data:`WORK_FACTOR`, as for the generated workflows; its parents come from ``parents``
    (or the ``children`` of others).

    Raises
    ------
    ValueError
        If the file is not WfFormat, has no tasks, names an unknown parent or has a cycle.
    """
    if isinstance(path, dict):
        doc, label = path, "wfformat"
    else:
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"path: no such WfFormat file {str(p)!r}")
        try:
            doc = json.loads(p.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"path: {str(p)!r} is not JSON ({exc.msg})") from None
        label = p.stem
    wf = doc.get("workflow") if isinstance(doc, dict) else None
    if not isinstance(wf, dict):
        raise ValueError("path: not a WfFormat document (no 'workflow' object)")
    spec_tasks = wf.get("specification", {}).get("tasks") if isinstance(wf.get("specification"), dict) else None
    tasks = spec_tasks if spec_tasks is not None else wf.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise ValueError("path: the WfFormat document has no tasks")
    runtimes: dict[str, dict[str, Any]] = {}
    execution = wf.get("execution")
    if isinstance(execution, dict):
        runtimes = {t.get("id"): t for t in execution.get("tasks", []) if isinstance(t, dict)}
    ids = [str(t.get("id", t.get("name"))) for t in tasks]
    index = {tid: i for i, tid in enumerate(ids)}
    if len(index) != len(ids):
        raise ValueError("path: task ids are not unique")
    work, kinds, edges = [], [], set()
    for i, t in enumerate(tasks):
        info = {**t, **runtimes.get(ids[i], {})}
        runtime = info.get("runtimeInSeconds", info.get("runtime"))
        if not isinstance(runtime, (int, float)) or runtime < 0:
            raise ValueError(f"path: task {ids[i]!r} has no non-negative runtime")
        work.append(float(runtime) * WORK_FACTOR)
        kinds.append(str(info.get("category", info.get("name", "task"))))
        for parent in t.get("parents", []) or []:
            if str(parent) not in index:
                raise ValueError(f"path: task {ids[i]!r} names unknown parent {parent!r}")
            edges.add((index[str(parent)], i))
        for child in t.get("children", []) or []:
            if str(child) not in index:
                raise ValueError(f"path: task {ids[i]!r} names unknown child {child!r}")
            edges.add((i, index[str(child)]))
    return Workflow(name=str(wf.get("name", doc.get("name", label))), work=np.asarray(work),
                    kinds=tuple(kinds), edges=np.asarray(sorted(edges), dtype=np.int64).reshape(-1, 2))
