import json

import networkx as nx
import numpy as np
import pytest

from optiforge.heuristics.scheduling.workflows import (
    SCALES,
    WORK_FACTOR,
    WORKFLOW_TYPES,
    Workflow,
    generate_workflow,
    load_wfformat,
    template,
)


@pytest.mark.parametrize("scale", list(SCALES))
def test_every_scale_has_the_published_task_counts(scale):
    for kind, size in SCALES[scale].items():
        wf = generate_workflow(kind, size)
        assert wf.n_tasks == size
        assert nx.is_directed_acyclic_graph(wf.to_networkx())
        assert np.all(wf.work > 0)


def test_montage_structure_follows_bharathi():
    wf = generate_workflow("montage", 25)
    kinds = np.array(wf.kinds)
    g = wf.to_networkx()
    for i in np.flatnonzero(kinds == "mDiffFit"):  # each diff compares two projections
        assert sorted(kinds[list(g.predecessors(i))]) == ["mProjectPP", "mProjectPP"]
    for i in np.flatnonzero(kinds == "mBackground"):
        assert sorted(kinds[list(g.predecessors(i))]) == ["mBgModel", "mProjectPP"]
    sinks = [i for i in g if g.out_degree(i) == 0]
    assert [kinds[i] for i in sinks] == ["mJPEG"]
    assert (kinds == "mProjectPP").sum() == (kinds == "mBackground").sum()


def test_cybershake_sipht_and_inspiral_joins():
    cs = generate_workflow("cybershake", 30)
    g = cs.to_networkx()
    sinks = sorted(cs.kinds[i] for i in g if g.out_degree(i) == 0)
    assert sinks == ["ZipPSA", "ZipSeis"]
    sipht = generate_workflow("sipht", 60)
    assert sipht.kinds.count("SRNA_annotate") == 2  # two units
    annotate = sipht.kinds.index("SRNA_annotate")
    assert len(sipht.parents[annotate]) == 5
    insp = generate_workflow("inspiral", 30)
    assert insp.kinds.count("Inspiral") == 2 * insp.kinds.count("TmpltBank")


def test_upward_rank_is_the_longest_path_of_work():
    wf = generate_workflow("inspiral", 50)
    g = wf.to_networkx()
    # Node-weighted longest path by brute force over sources.
    best = 0.0
    for path in nx.all_simple_paths(g, source=0, target=[i for i in g if g.out_degree(i) == 0]):
        best = max(best, float(wf.work[path].sum()))
    assert wf.upward_rank[0] == pytest.approx(best)
    assert wf.critical_work >= wf.upward_rank[0]
    sink = [i for i in g if g.out_degree(i) == 0][0]
    assert wf.upward_rank[sink] == wf.work[sink]


def test_generation_is_seeded_and_templates_are_cached():
    a, b = generate_workflow("sipht", 30, seed=3), generate_workflow("sipht", 30, seed=3)
    assert np.array_equal(a.work, b.work)
    assert not np.array_equal(a.work, generate_workflow("sipht", 30, seed=4).work)
    assert template("montage", 25) is template("montage", 25)


def test_bad_workflow_arguments():
    with pytest.raises(ValueError, match="kind"):
        generate_workflow("epigenomics", 30)
    with pytest.raises(ValueError, match="size"):
        generate_workflow("montage", 5)
    with pytest.raises(TypeError, match="size"):
        generate_workflow("montage", 25.0)
    with pytest.raises(ValueError, match="cycle"):
        Workflow("x", np.ones(2), ("a", "b"), np.array([[0, 1], [1, 0]]))


def _wfformat(wf: Workflow) -> dict:
    tasks = [{"id": f"t{i}", "name": wf.kinds[i], "runtimeInSeconds": float(wf.work[i] / WORK_FACTOR),
              "parents": [f"t{p}" for p in wf.parents[i]]} for i in range(wf.n_tasks)]
    return {"name": "roundtrip", "workflow": {"tasks": tasks}}


def test_wfformat_round_trip(tmp_path):
    wf = generate_workflow("cybershake", 30)
    path = tmp_path / "cs.json"
    path.write_text(json.dumps(_wfformat(wf)))
    loaded = load_wfformat(path)
    assert np.allclose(loaded.work, wf.work)
    assert sorted(map(tuple, loaded.edges.tolist())) == sorted(map(tuple, wf.edges.tolist()))
    assert loaded.critical_work == pytest.approx(wf.critical_work)


def test_wfformat_schema_14_and_children_links():
    doc = {"name": "w", "workflow": {
        "specification": {"tasks": [{"id": "a", "children": ["b"]}, {"id": "b", "parents": []}]},
        "execution": {"tasks": [{"id": "a", "runtimeInSeconds": 2.0}, {"id": "b", "runtimeInSeconds": 3.0}]}}}
    wf = load_wfformat(doc)
    assert wf.edges.tolist() == [[0, 1]]
    assert wf.critical_work == pytest.approx(5.0 * WORK_FACTOR)


@pytest.mark.parametrize("doc, match", [
    ({"nope": 1}, "WfFormat"),
    ({"workflow": {"tasks": []}}, "no tasks"),
    ({"workflow": {"tasks": [{"id": "a", "runtime": 1, "parents": ["z"]}]}}, "unknown parent"),
    ({"workflow": {"tasks": [{"id": "a"}]}}, "runtime"),
])
def test_wfformat_rejects_bad_documents(doc, match):
    with pytest.raises(ValueError, match=match):
        load_wfformat(doc)


def test_wfformat_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="path"):
        load_wfformat(tmp_path / "none.json")
    assert len(WORKFLOW_TYPES) == 4
