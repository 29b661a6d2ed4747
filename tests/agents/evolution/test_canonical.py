"""The canonical form: semantic copies collide, different programs never do, and the form behaves
like the program it came from."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.agents.evolution.canonical import code_hash, normalize_code

BASE = '''import numpy as np
import math


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Tight bins, with a log penalty on the waste."""
    waste = bins - item
    penalty = [math.log1p(w) for w in waste]
    return -waste - 0.1 * np.asarray(penalty)
'''

# Each is BASE rewritten in a way Python ignores.
SAME = {
    "imports reordered": BASE.replace("import numpy as np\nimport math", "import math\nimport numpy as np"),
    "imports on one line": BASE.replace("import numpy as np\nimport math", "import numpy as np, math"),
    "import repeated": BASE.replace("import math\n", "import math\nimport numpy as np\nimport math\n"),
    "comments and blank lines": BASE.replace("    waste =", "    # the room left\n\n    waste =  ")
    .replace("np.asarray(penalty)", "np.asarray(penalty)  # shape of bins"),
    "docstring changed": BASE.replace("Tight bins, with a log penalty on the waste.", "Best fit, smoothed."),
    "docstring dropped": BASE.replace('    """Tight bins, with a log penalty on the waste."""\n', ""),
    "string comment": BASE.replace("    waste =", '    "a stray string statement"\n    waste ='),
    "annotations": BASE.replace("item: float, bins: np.ndarray) -> np.ndarray", "item, bins)")
    .replace("    waste = ", "    waste: np.ndarray = "),
    "locals renamed": BASE.replace("waste", "room").replace("penalty", "p").replace(" w ", " r ")
    .replace("(w)", "(r)"),
    "comprehension variable renamed": BASE.replace("(w) for w in", "(slack) for slack in"),
}

# Each differs from BASE in behaviour (or may, depending on what the module binds).
DIFFERENT = {
    "constant": BASE.replace("0.1 *", "0.2 *"),
    "operator": BASE.replace("-waste -", "-waste +"),
    "returns another local": BASE.replace("return -waste - 0.1 * np.asarray(penalty)",
                                          "return -np.asarray(penalty) - 0.1 * waste"),
    "other variable": BASE.replace("waste = bins - item", "waste = bins - bins.min()"),
    "another module function": BASE.replace("math.log1p", "math.log"),
}


def _priority(code: str):
    ns: dict = {}
    exec(compile(code, "<program>", "exec"), ns)
    return ns["priority"]


def test_base_corpus_is_valid_python_that_runs():
    # A rewrite that is not valid Python would collide for the wrong reason.
    bins = np.array([10.0, 55.0, 99.0])
    for code in [BASE, *SAME.values(), *DIFFERENT.values()]:
        assert _priority(code)(5.0, bins).shape == (3,)


@pytest.mark.parametrize("name", sorted(SAME))
def test_semantic_copies_collide(name):
    assert SAME[name] != BASE
    assert code_hash(SAME[name]) == code_hash(BASE)


@pytest.mark.parametrize("name", sorted(DIFFERENT))
def test_different_programs_do_not_collide(name):
    assert code_hash(DIFFERENT[name]) != code_hash(BASE)
    assert code_hash(DIFFERENT[name]) not in {code_hash(c) for c in SAME.values()}


@pytest.mark.parametrize("code", [BASE, *SAME.values(), *DIFFERENT.values()])
def test_canonical_form_behaves_like_the_program(code):
    rng = np.random.default_rng(0)
    canonical = normalize_code(code)
    for _ in range(20):
        item = float(rng.uniform(1, 50))
        bins = rng.uniform(item, 100, size=int(rng.integers(1, 9)))
        assert np.array_equal(_priority(code)(item, bins), _priority(canonical)(item, bins))
    assert normalize_code(canonical) == canonical


@pytest.mark.parametrize(
    "a, b",
    [
        # The first iterable of a comprehension is evaluated outside it: here the global x.
        ("x = [1]\ndef f(b):\n    y = [x for x in x]\n    return y\n",
         "x = [1]\ndef f(b):\n    y = [z for z in b]\n    return y\n"),
        # x after the comprehension is the global, not the comprehension's variable.
        ("def f(b):\n    y = [x for x in b]\n    return x\n",
         "def f(b):\n    y = [z for z in b]\n    return z\n"),
        # A lambda's parameter is kept: it may be passed by keyword.
        ("def f(b):\n    g = lambda t: t + 1\n    return g(t=b)\n",
         "def f(b):\n    g = lambda s: s + 1\n    return g(t=b)\n"),
        # A parameter reassigned is still the parameter.
        ("def f(b):\n    b = b * 2\n    return b\n", "def f(c):\n    c = c * 2\n    return c\n"),
        # With `global`, the name is the module's: renaming it would break the write.
        ("n = 0\ndef f(b):\n    global n\n    n = b\n    return n\n",
         "n = 0\ndef f(b):\n    global m\n    m = b\n    return m\n"),
        # locals() sees the names.
        ("def f(b):\n    a = b\n    return sorted(locals())\n", "def f(b):\n    c = b\n    return sorted(locals())\n"),
        # Two imports of one name: the last one wins, so their order matters.
        ("from math import sqrt as r\nfrom numpy import sqrt as r\n",
         "from numpy import sqrt as r\nfrom math import sqrt as r\n"),
    ],
)
def test_scope_edge_cases_are_not_merged(a, b):
    assert code_hash(a) != code_hash(b)


def test_renaming_follows_closures_and_walrus():
    a = ("def f(b):\n    k = 2\n    def g(z):\n        return z * k\n"
         "    if (n := len(b)) > 1:\n        return [g(v) + n for v in b]\n    return b\n")
    b = ("def f(b):\n    scale = 2\n    def g(z):\n        return z * scale\n"
         "    if (count := len(b)) > 1:\n        return [g(w) + count for w in b]\n    return b\n")
    assert code_hash(a) == code_hash(b)
    # Fresh names never capture a name the program keeps (a global called _v0 here).
    c = "_v0 = 5\ndef f(b):\n    t = b\n    return t + _v0\n"
    assert normalize_code(c).count("_v0") == 2 and _priority_f(c)(1) == 6 == _priority_f(normalize_code(c))(1)


def _priority_f(code: str):
    ns: dict = {}
    exec(compile(code, "<program>", "exec"), ns)
    return ns["f"]


def test_display_form_keeps_names():
    shown = normalize_code(BASE, canonical_names=False)
    assert "waste" in shown and "Tight bins" not in shown and shown.startswith("import math\nimport numpy")


def test_docstring_only_function_stays_valid():
    assert normalize_code('def f():\n    """Only a docstring."""\n') == "def f():\n    pass"


def test_unparsable_code_hashes_textually():
    assert code_hash("def f(:\n  # c\n  x") == code_hash("def f(:\n  x")
    assert code_hash("def f(:\n  x") != code_hash("def f(:\n  y")
    with pytest.raises(TypeError, match="code"):
        normalize_code(None)  # type: ignore[arg-type]
