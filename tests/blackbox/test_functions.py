import math
import pickle

import numpy as np
import pytest
from scipy.optimize import minimize

from optiforge.blackbox import blackbox_task_names, get_blackbox_task, shifted
from optiforge.validation import UnknownTaskError

# Optimal values as listed in research/hollm_blackbox.md section 4 (BoTorch's values).
NOTE_OPTIMA = {
    "branin": 0.397887, "hartmann-3": -3.86278, "hartmann-6": -3.32237, "ackley-20": 0.0,
    "levy-10": 0.0, "rastrigin-10": 0.0, "rosenbrock-8": 0.0, "styblinski-tang-10": -391.66166,
}


@pytest.mark.parametrize("name", sorted(NOTE_OPTIMA))
def test_value_at_known_minimiser_matches_research_note(name):
    task = get_blackbox_task(name)
    assert task.optimum == pytest.approx(NOTE_OPTIMA[name], abs=1e-4)
    assert task.evaluate_array(np.array(task.argmin)) == pytest.approx(NOTE_OPTIMA[name], abs=1e-4)


@pytest.mark.parametrize("name", sorted(NOTE_OPTIMA))
def test_no_random_point_beats_the_optimum(name):
    task = get_blackbox_task(name)
    rng = np.random.default_rng(0)
    values = [task(p) for p in task.space.sample(rng, 300)]
    assert min(values) > task.optimum - 1e-9
    # The minimiser is a strict improvement on random points (the function is not flat).
    assert min(values) > task.optimum + 1e-3


def test_branin_has_three_minima():
    task = get_blackbox_task("branin")
    for x in [(-math.pi, 12.275), (math.pi, 2.275), (9.42478, 2.475)]:
        assert task({"x1": x[0], "x2": x[1]}) == pytest.approx(0.397887, abs=1e-5)


def test_michalewicz_local_search_reaches_note_value_in_2d():
    task = get_blackbox_task("michalewicz-2")
    res = minimize(task.evaluate_array, x0=[2.2, 1.57], bounds=[(0, math.pi)] * 2)
    assert res.fun == pytest.approx(-1.8013, abs=1e-4)
    assert get_blackbox_task("michalewicz-5").optimum == pytest.approx(-4.687658)
    assert get_blackbox_task("michalewicz-10").optimum == pytest.approx(-9.66015)
    assert get_blackbox_task("michalewicz-7").optimum is None


def test_bounds_and_dims_from_names():
    t = get_blackbox_task("ackley-20")
    assert t.dim == 20 and t.space.params["x1"].low == -32.768 and t.space.params["x20"].high == 32.768
    assert get_blackbox_task("levy").dim == 10
    assert get_blackbox_task("Hartmann_6").name == "hartmann-6"
    assert get_blackbox_task("rosenbrock-8").space.params["x3"].high == 2.048
    assert get_blackbox_task("styblinski-tang-3").dim == 3
    for name in blackbox_task_names():
        assert get_blackbox_task(name).name == name


@pytest.mark.parametrize(("bad", "unknown"), [
    ("sphere-3", True), ("ackley-x", True), ("", True), ("hartmann-4", True), ("nope@shift3", True),
    ("ackley-1", False), ("ackley-1001", False), ("levy-10@shiftx", False),
])
def test_bad_task_names_name_the_argument_and_say_whether_the_task_exists(bad, unknown):
    with pytest.raises(ValueError, match="task:") as info:
        get_blackbox_task(bad)
    # A caller (the CLI's `tasks show`) replaces only "no such task" with its own message;
    # a known family with a bad dimension or instance keeps the library's explanation.
    assert isinstance(info.value, UnknownTaskError) is unknown


def test_call_validates_params():
    task = get_blackbox_task("branin")
    with pytest.raises(ValueError, match=r"params\.x1: 20\.0 is outside"):
        task({"x1": 20.0, "x2": 1.0})


@pytest.mark.parametrize("name", ["levy-10", "rosenbrock-8", "ackley-5", "hartmann-6"])
def test_shifted_task_keeps_its_optimum_value_at_the_moved_minimiser(name):
    task = get_blackbox_task(name)
    moved = shifted(task, 3)
    assert moved.optimum == task.optimum
    assert moved.evaluate_array(np.array(moved.argmin)) == pytest.approx(task.optimum, abs=1e-9)
    assert not np.allclose(moved.argmin, task.argmin, atol=1e-3)
    # The old minimiser is no longer optimal: the landscape moved.
    assert moved.evaluate_array(np.array(task.argmin)) > task.optimum + 1e-3
    rng = np.random.default_rng(1)
    assert min(moved(p) for p in moved.space.sample(rng, 200)) > task.optimum + 1e-3


def test_shifted_minimiser_is_drawn_inside_the_middle_of_the_box_by_instance():
    task = get_blackbox_task("levy-10")
    lo, hi = -10.0, 10.0
    units = np.array([(np.array(shifted(task, i).argmin) - lo) / (hi - lo) for i in range(50)])
    assert units.min() >= 0.1 and units.max() <= 0.9
    # Spread over the middle 80 %, not bunched at one place (the point of moving it).
    assert units.std() > 0.2
    assert shifted(task, 7).argmin == shifted(task, 7).argmin
    assert shifted(task, 7).argmin != shifted(task, 8).argmin
    assert shifted(task, 7).name == "levy-10@shift7"


def test_shifted_task_pickles_for_worker_processes():
    moved = shifted(get_blackbox_task("rosenbrock-8"), 2)
    back = pickle.loads(pickle.dumps(moved))
    x = np.linspace(-1, 1, 8)
    assert back.evaluate_array(x) == moved.evaluate_array(x)


def test_shifted_rejects_bad_input_naming_the_argument():
    task = get_blackbox_task("levy-10")
    with pytest.raises(TypeError, match="instance"):
        shifted(task, 1.5)
    with pytest.raises(ValueError, match="instance"):
        shifted(task, -1)
    with pytest.raises(TypeError, match="task"):
        shifted("levy-10", 1)
    with pytest.raises(ValueError, match="task: 'michalewicz-10' has no known minimiser"):
        shifted(get_blackbox_task("michalewicz-10"), 1)


def test_a_shifted_task_is_found_again_by_its_name():
    # Campaigns store a task by name, so a shifted instance must come back from it.
    moved = shifted(get_blackbox_task("rosenbrock-8"), 4)
    again = get_blackbox_task(moved.name)
    assert again.name == moved.name and again.argmin == moved.argmin
    x = np.full(8, 0.3)
    assert again.evaluate_array(x) == moved.evaluate_array(x)
    with pytest.raises(ValueError, match="'@shift' takes an instance number"):
        get_blackbox_task("levy-10@shiftx")
    with pytest.raises(ValueError, match="no known minimiser"):
        get_blackbox_task("michalewicz-10@shift1")
