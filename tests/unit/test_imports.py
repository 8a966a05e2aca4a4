"""The import graph of ``orchestrate`` and ``locustfiles``, read from the source: no circles, and the
Locust side imports nothing of the orchestrator.

Every import counts: top-level, inside functions and under ``TYPE_CHECKING`` (a circle that only
type checking sees is still two modules that cannot be read apart).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

PACKAGES = ("orchestrate", "locustfiles")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _owner(name: str) -> str | None:
    """The project module a dotted name lives in (``orchestrate.scenario.spec.LoadSpec`` → ``orchestrate.scenario.spec``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> set[str]:
    """The project modules ``module`` imports, anywhere in its source."""
    out: set[str | None] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            out |= {_owner(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out |= {_owner(f"{node.module}.{alias.name}") for alias in node.names}
    out.discard(None)
    out.discard(module)
    return {m for m in out if m is not None}


GRAPH = {module: imports_of(module) for module in MODULES}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_is_read() -> None:
    assert "orchestrate.cli" in GRAPH and "locustfiles.events" in GRAPH
    assert "orchestrate.commands" in GRAPH["orchestrate.cli"]
    assert "orchestrate.commands.scenario_options" in GRAPH["orchestrate.commands.run"]
    assert "orchestrate.scenario.spec" in GRAPH["orchestrate.scenario.parse"]
    assert "locustfiles.runstate" in GRAPH["locustfiles.arrivals"]


def test_the_circle_finder_finds_circles() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles() -> None:
    assert circles(GRAPH) == []


def _required_imports(module: str) -> set[str]:
    """Like ``imports_of``, leaving out imports guarded by ``except ImportError`` (optional ones)."""
    tree = ast.parse(MODULES[module].read_text())
    optional = {id(node) for guard in ast.walk(tree) if isinstance(guard, ast.Try)
                and any(isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                        for h in guard.handlers)
                for stmt in guard.body for node in ast.walk(stmt)}
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level and id(node) not in optional:
            out |= {_owner(f"{node.module}.{alias.name}") or node.module for alias in node.names}
        elif isinstance(node, ast.Import) and id(node) not in optional:
            out |= {alias.name for alias in node.names}
    return out


def test_locustfiles_import_nothing_of_the_orchestrator() -> None:
    """Workers on other hosts run ``locustfiles/`` alone; an ``orchestrate`` import there must be optional
    (``promptsource`` makes ``synthetic:N`` through the project only where it is installed)."""
    bad = {m: sorted(i for i in _required_imports(m) if i.split(".")[0] == "orchestrate")
           for m in MODULES if m.startswith("locustfiles")}
    assert {m: deps for m, deps in bad.items() if deps} == {}


STAGES = ("scenario", "server", "load", "report")
"""The pipeline's order: a stage imports only itself and the stages before it. ``tools/``, ``plans/`` (the kinds of
run, which the run loop runs), ``tune/`` (a tune's loop of server starts and its strategy), ``commands/`` (each subcommand's arguments and main, and what ``run``'s flags make)
and the modules at the top (``cli``, ``runloop``, ``variantrun``, ``resume``, ``results``, ``errors``, ``cache``,
``processes``) may import any stage."""


def stage_of(module: str) -> int | None:
    parts = module.split(".")
    return STAGES.index(parts[1]) if parts[0] == "orchestrate" and len(parts) > 2 and parts[1] in STAGES else None


def test_no_stage_imports_a_later_one() -> None:
    backwards = sorted(f"{m} → {dep}" for m, deps in GRAPH.items() for dep in deps
                       if stage_of(m) is not None and stage_of(dep) is not None
                       and stage_of(dep) > stage_of(m))  # type: ignore[operator]
    assert backwards == []


GROUND = ("orchestrate.results", "orchestrate.errors", "orchestrate.cache", "orchestrate.processes")
"""The ground floor, with ``orchestrate.standins`` (the tiny models and synthetic datasets made instead of
downloaded): every stage may import these, so they import no stage (nor ``tools``, nor the top)."""


def on_the_ground(module: str) -> bool:
    return module in GROUND or module.startswith("orchestrate.standins")


def test_the_ground_floor_imports_no_stage() -> None:
    ground = [m for m in GRAPH if on_the_ground(m)]
    assert len(ground) > len(GROUND)
    up = {m: sorted(d for d in GRAPH[m] if d.startswith("orchestrate.") and not on_the_ground(d)) for m in ground}
    assert {m: deps for m, deps in up.items() if deps} == {}


def test_no_stage_uses_a_tool() -> None:
    """``tools/`` are commands beside the pipeline (the reference server, calibration, the noise floor)."""
    users = sorted(f"{m} → {d}" for m, deps in GRAPH.items() for d in deps
                   if d.startswith("orchestrate.tools") and stage_of(m) is not None)
    assert users == []


def test_every_module_lives_in_a_stage_or_is_named_at_the_top() -> None:
    top = {"orchestrate", "orchestrate.cli", "orchestrate.runloop", "orchestrate.variantrun", "orchestrate.resume",
           "orchestrate.results", "orchestrate.errors", "orchestrate.cache", "orchestrate.processes"}
    loose = sorted(m for m in MODULES if m.startswith("orchestrate") and m not in top
                   and m.split(".")[1] not in (*STAGES, "plans", "tune", "tools", "standins", "commands"))
    assert loose == []


def test_the_installed_project_lists_every_package() -> None:
    """setuptools installs only the packages pyproject names: a folder missing there breaks ``pip install``."""
    import tomllib
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {module_name(p.parent / "__init__.py") for package in PACKAGES
               for p in (ROOT / package).rglob("__init__.py")}
    assert listed == folders


RESOLVE = """
import locust  # first: it monkey-patches ssl, as it does in a Locust process
import ast, importlib, json, sys
bad = []
for f in sys.argv[1:]:
    for n in ast.walk(ast.parse(open(f).read())):
        if isinstance(n, ast.ImportFrom) and n.module and not n.level and n.module.split('.')[0] in {packages}:
            try:
                module = importlib.import_module(n.module)
            except ImportError as exc:
                bad.append(f"{{f}}:{{n.lineno}} {{n.module}}: {{exc}}")
                continue
            for alias in n.names:
                if not hasattr(module, alias.name):
                    try:
                        importlib.import_module(n.module + '.' + alias.name)
                    except ImportError:
                        bad.append(f"{{f}}:{{n.lineno}} {{n.module}} has no {{alias.name}}")
print(json.dumps(bad))
"""


def test_every_project_import_resolves_in_code_tests_and_benchmarks() -> None:
    """After a move, a stale ``from orchestrate.X import Y`` in a benchmark or an integration test is found here,
    not when that script next runs."""
    import json
    import subprocess
    import sys
    files = [str(p) for folder in ("orchestrate", "locustfiles", "tests", "benchmarks")
             for p in sorted((ROOT / folder).rglob("*.py"))]
    proc = subprocess.run([sys.executable, "-c", RESOLVE.format(packages=set(PACKAGES)), *files],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
