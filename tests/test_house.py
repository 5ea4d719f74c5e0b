"""The shape of the package (CONTRIBUTING.md, "Layers"): imports point one way, down the layers

    app (jaxmetrics/report) -> public API -> {streaming, losses} -> metrics -> stats -> mesh -> core

no module is over 450 lines, no private name crosses a module, and no unsupported API is used.
Reads the source with `ast`; imports nothing of the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "jaxmetrics"
# a layer may import its own package and any layer of a lower rank
RANKS = {"core": 0, "mesh": 1, "stats": 2, "metrics": 3, "losses": 4, "streaming": 4, "api": 5}
RANKS["app"] = 6
PUBLIC = {"jaxmetrics", "jaxmetrics.losses", "jaxmetrics.streaming"}
FORBIDDEN = ("ctypes", "pickle", "cloudpickle", "jax._src", "jax.experimental.serialize_executable")
LIMIT = 450


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _layer(module: str) -> str:
    parts = module.split(".")
    if parts == ["jaxmetrics", "_src"]:
        return "core"  # the namespace's empty __init__
    if parts[:2] == ["jaxmetrics", "_src"]:
        assert len(parts) > 2 and parts[2] in RANKS, f"{module} sits in no layer"
        return parts[2]
    return "app" if parts[:2] == ["jaxmetrics", "report"] else "api"


def _imports(module: str) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every import of `module`, relative ones
    resolved; the names that are modules themselves count as imports of those modules."""
    path = MODULES[module]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = module.split(".")
            if node.level:
                base = base[: len(base) - node.level + (path.name == "__init__.py")]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            found.append((target, names))
            found.extend((f"{target}.{n}", []) for n in names if f"{target}.{n}" in MODULES)
        elif isinstance(node, ast.Import):
            found.extend((a.name, []) for a in node.names)
    return found


def _internal_edges() -> dict[str, set[str]]:
    return {
        m: {t for t, _ in _imports(m) if t in MODULES and t != m and not m.startswith(t + ".")}
        for m in MODULES
    }


def test_every_private_module_sits_in_a_layer():
    for module in MODULES:
        _layer(module)


def test_imports_never_climb_the_layers():
    climbing = [
        f"{m} -> {t}"
        for m, targets in _internal_edges().items()
        for t in targets
        if RANKS[_layer(t)] > RANKS[_layer(m)]
        or (RANKS[_layer(t)] == RANKS[_layer(m)] and _layer(t) != _layer(m))
    ]
    assert climbing == []


def test_the_app_uses_the_public_api_only():
    app = [m for m in MODULES if _layer(m) == "app"]
    edges = _internal_edges()  # (once: it parses every module)
    reached = [
        f"{m} -> {t}" for m in app for t in edges[m] if t not in PUBLIC and _layer(t) != "app"
    ]
    assert reached == []


def test_no_import_cycles():
    edges, state, cycles = _internal_edges(), {}, []

    def visit(module, path):
        state[module] = "open"
        for target in sorted(edges[module]):
            if state.get(target) == "open":
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(MODULES):
        if module not in state:
            visit(module, [module])
    assert cycles == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size_and_imports(module):
    text = MODULES[module].read_text()
    assert text.count("\n") <= LIMIT, f"{module} has {text.count(chr(10))} lines"
    for target, names in _imports(module):
        assert not any(target == f or target.startswith(f + ".") for f in FORBIDDEN), target
        if target in MODULES and target != module:
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            private = [n for n in private if f"{target}.{n}" not in MODULES]
            assert private == [], f"{module} imports {private} from {target}"


def test_the_checks_catch_what_they_look_for(tmp_path, monkeypatch):
    """The helpers above are not vacuous: a climbing import, a cycle and a private name in a
    made-up package are all seen."""
    fake = {
        "jaxmetrics._src.core.a": "from jaxmetrics._src.metrics import b\n",
        "jaxmetrics._src.metrics.b": "from jaxmetrics._src.core.a import _hidden\n",
    }
    paths = {}
    for name, text in fake.items():
        path = tmp_path / (name.replace(".", "_") + ".py")
        path.write_text(text)
        paths[name] = path
    monkeypatch.setitem(globals(), "MODULES", paths)
    with pytest.raises(AssertionError):
        test_imports_never_climb_the_layers()
    with pytest.raises(AssertionError):
        test_no_import_cycles()
    with pytest.raises(AssertionError):
        test_module_size_and_imports("jaxmetrics._src.metrics.b")
