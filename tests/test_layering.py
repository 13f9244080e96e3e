"""DESIGN: nothing below imports from above it. dram, graphs and placement (and their command
line modules) never import the cosmos or experiments packages; they share the error type and
the version through cosmos_common. No model (cosmos, dram, graphs, placement, rag) imports the
experiments; inside experiments, the figures use the harness and the models, the harness
reaches a figure only through the registry, and the tools may import anything."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("modules", [
    "cosmos_common, cosmos_common.outdir, cosmos_common.npz",
    "placement, placement.cli, placement.io",
    "graphs, graphs.cli, graphs.io, graphs.dataset, graphs.workload",
    "dram, dram.cli, dram.output",
])
def test_lower_packages_do_not_import_cosmos_or_experiments(modules):
    code = (f"import sys; import {modules}; "
            "print(','.join(m for m in sys.modules if m.split('.')[0] in ('cosmos', 'experiments')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300)
    assert out.stdout.strip() == "", out.stdout


def test_graphs_cli_runs_alone_with_one_line_errors():
    p = subprocess.run([sys.executable, "-m", "graphs.cli", "trace", "--dataset", "sift",
                        "--M", "1", "--out", "never.npz"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip() == ("graphs: error: --M=1 must be in 2..10000 (hnswlib caps M at "
                                "10000; the level-0 degree limit is 2*M)")


# ---- no import cycle inside a package (imports inside functions counted) ---------------------

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cosmos", "cosmos_common", "dram", "graphs", "placement", "rag", "experiments")
#: the models: packages that describe a system and never import the experiments
MODELS = ("cosmos", "cosmos_common", "dram", "graphs", "placement", "rag")


def _modules(package: str) -> dict:
    """Module name -> file, for every module of ``package``."""
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported_names(package: str) -> dict:
    """Module -> every module name it imports (of any package), anywhere in its file (at the
    top or inside a function); ``from p import x`` gives ``p.x``, relative imports resolved."""
    out = {}
    for mod, path in _modules(package).items():
        is_pkg = path.name == "__init__.py"
        names = out[mod] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    here = here[:len(here) - node.level + 1]
                    base = ".".join(here + ([node.module] if node.module else []))
                names |= {base} | {f"{base}.{a.name}" for a in node.names}
    return out


def import_graph(package: str) -> dict:
    """Module -> the modules of the same package it imports, anywhere in its file (at the top
    or inside a function). ``from p import x`` is an arrow to ``p.x`` when that is a module,
    else to ``p``; ``import p.q.r`` to the longest module name it begins with."""
    mods = _modules(package)
    graph = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    here = here[:len(here) - node.level + 1]
                    base = ".".join(here + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    graph[mod].add(t)
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (each an import cycle)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_sees_a_cycle_through_a_function_level_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    graph = import_graph("cosmos")
    # arrows from imports inside functions are there (cosmos.simulate_cli imports
    # cosmos.simulate inside run(), for a fast start-up)
    assert "cosmos.simulate" in graph["cosmos.simulate_cli"]


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_has_no_import_cycle(package):
    """DESIGN: inside a package, dependencies run one way (no import cycles, counting imports
    inside functions)."""
    found = cycles(import_graph(package))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_declarations_import_nothing_of_the_builder():
    """cosmos.systems (the declaration layer, its vocabulary included) imports only the
    configuration of cosmos: not the program builder, the engine or anything above them."""
    assert import_graph("cosmos")["cosmos.systems"] <= {"cosmos.config", "cosmos.units"}


# ---- the experiments by concern: figures, harness, tools; the models never import them ------

def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("package", MODELS)
def test_no_model_imports_the_experiments(package):
    """cosmos, dram, graphs, placement and rag (and cosmos_common) import nothing of
    experiments, anywhere in their files (cosmos's command line reaches the experiments'
    commands by module name, experiments.harness.cli, not by an import)."""
    bad = {m: sorted(n for n in names if _under(n, "experiments"))
           for m, names in imported_names(package).items()}
    bad = {m: n for m, n in bad.items() if n}
    assert not bad, bad


def test_the_experiments_import_one_way():
    """Figures use the harness and the models (and other figures); the harness reaches a
    figure only through the registry (experiments.figures itself, imported for REGISTRY; the
    modules by name through importlib); nothing but a tool imports a tool; the registry
    imports nothing of the experiments, so reading it loads no figure."""
    found = imported_names("experiments")
    wrong = []
    for mod, names in found.items():
        for n in names:
            if not _under(n, "experiments"):
                continue
            if _under(n, "experiments.tools") and not _under(mod, "experiments.tools"):
                wrong.append(f"{mod} imports the tool {n}")
            if _under(mod, "experiments.harness") and _under(n, "experiments.figures") \
                    and n != "experiments.figures.REGISTRY" and n != "experiments.figures":
                wrong.append(f"{mod} (harness) imports the figure {n}")
            if mod == "experiments.figures":
                wrong.append(f"the registry imports {n}")
    assert not wrong, wrong
    # the rule sees such an import: a figure module imported by the harness would be listed
    assert "experiments.figures.fig4a_qps.system_tasks" in found["experiments.tools.check_full_ci"]


def test_the_figures_folder_is_the_registry():
    """Every module of experiments/figures is one line of the registry and the other way
    round, so the folder says which files are experiments."""
    from experiments.figures import REGISTRY

    folder = sorted(p.stem for p in (ROOT / "experiments" / "figures").glob("*.py")
                    if p.stem != "__init__")
    assert folder == sorted(e.name for e in REGISTRY)
    assert len({e.name for e in REGISTRY}) == len(REGISTRY)


def test_the_old_script_paths_only_forward():
    """experiments/ holds the three folders, its __init__, and, for one release, the old
    script paths of the experiments, each forwarding to experiments/figures/NAME.py (nothing
    else; a new experiment gets no file here)."""
    from experiments.figures import REGISTRY

    names = {e.name for e in REGISTRY}
    loose = sorted(p.stem for p in (ROOT / "experiments").glob("*.py"))
    assert set(loose) - {"__init__", "moved"} <= names, loose
    for stem in set(loose) - {"__init__", "moved"}:
        src = (ROOT / "experiments" / f"{stem}.py").read_text()
        assert "forward(__name__, __file__)" in src and len(src.splitlines()) < 12, stem
    folders = sorted(p.name for p in (ROOT / "experiments").iterdir()
                     if p.is_dir() and p.name != "__pycache__")
    assert folders == ["figures", "harness", "tools"]


def test_an_old_script_path_runs_the_moved_experiment():
    """``python experiments/NAME.py`` says where the script went and runs it (its options);
    ``import experiments.NAME`` is the moved module."""
    p = subprocess.run([sys.executable, str(ROOT / "experiments" / "fig5b_heatmap.py"), "--help"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "moved to experiments/figures/fig5b_heatmap.py" in p.stderr
    assert p.stdout.startswith("usage: fig5b_heatmap.py")
    import experiments.fig5b_heatmap as old
    from experiments.figures import fig5b_heatmap

    assert old is fig5b_heatmap
