"""The harness's structure, checked: imports go one way through the folders of pstudy/ (commands,
then show and analyse, then measure and store, then common and errors) with no cycle, subcommands
do not import each other, only show/ imports matplotlib, module names do not differ by a letter,
and no module but the vocabulary spells a variant's name."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PSTUDY = REPO / "harness" / "pstudy"


def all_imports(source):
    """Every module a source text imports (absolute names), wherever the import statement is."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def imported_modules(path):
    """Every pstudy module a file imports."""
    return {m for m in all_imports(path.read_text()) if m.startswith("pstudy")}


def imports_matplotlib(source):
    return any(m == "matplotlib" or m.startswith("matplotlib.") for m in all_imports(source))


# A module may import modules of its own folder and of the folders ranked below its own, never
# above: commands and the dispatcher use everything; show draws what analyse computes; analyse
# reads what measure and store hold; measure writes through store; store uses common and errors.
# The same order among the modules at the top: __main__, cli (the dispatcher), common, errors.
RANKS = {"errors": 0, "common": 1, "store": 2, "measure": 3, "analyse": 4, "show": 5, "commands": 6,
         "cli": 7, "__main__": 8}


def module_name(path):
    parts = path.relative_to(PSTUDY.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def rank(name):
    """The rank of a module (pstudy.X.Y or pstudy.X): its folder's, or its own at the top."""
    parts = name.split(".")
    return RANKS.get(parts[1]) if len(parts) > 1 else None


def import_graph():
    modules = {module_name(p): p for p in PSTUDY.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in imported_modules(path):
            # "from pstudy.store import resultsdir" names pstudy.store and pstudy.store.resultsdir
            if imported in modules and imported != name and modules[imported].name != "__init__.py":
                targets.add(imported)
        graph[name] = targets
    return graph


def layer_violations(graph):
    out = []
    for name, targets in graph.items():
        for target in targets:
            same_folder = name.split(".")[:-1] == target.split(".")[:-1] and name.count(".") == 2
            if not same_folder and rank(target) is not None and rank(name) is not None \
                    and rank(target) >= rank(name):
                out.append(f"{name} imports {target}")
    return sorted(out)


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_imports_go_one_way_through_the_folders():
    assert layer_violations(import_graph()) == []


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_layer_checks_catch_a_violation():
    """The two checks above on a graph with an upward import and a cycle: they must see both."""
    graph = {"pstudy.store.resultsdir": {"pstudy.analyse.stats"}, "pstudy.analyse.stats": {"pstudy.store.resultsdir"},
             "pstudy.measure.runner": {"pstudy.store.vocabulary"}, "pstudy.store.vocabulary": set()}
    assert layer_violations(graph) == ["pstudy.store.resultsdir imports pstudy.analyse.stats"]
    assert cycles(graph) == [["pstudy.analyse.stats", "pstudy.store.resultsdir"]]


def test_figures_are_drawn_in_show_alone():
    """Only show/ imports matplotlib: the others compute and store what show/ draws. Naming it in a
    string (provenance's version report) is not an import."""
    drawing = [str(path.relative_to(PSTUDY)) for path in sorted(PSTUDY.rglob("*.py"))
               if PSTUDY / "show" not in path.parents and imports_matplotlib(path.read_text())]
    assert drawing == []


def test_the_matplotlib_check_sees_every_kind_of_import():
    for source in ("import matplotlib", "import matplotlib.pyplot as plt", "from matplotlib import pyplot",
                   "from matplotlib.patches import Patch", "def f():\n    import matplotlib\n"):
        assert imports_matplotlib(source), source
    for source in ('NAMES = ("pandas", "matplotlib")', "import matplotlibx", "from pstudy import show"):
        assert not imports_matplotlib(source), source


def test_every_module_is_in_a_folder_with_a_one_line_introduction():
    top = {p.stem for p in PSTUDY.glob("*.py")}
    assert top == {"__init__", "__main__", "cli", "common", "errors"}, sorted(top)
    for folder in sorted(p for p in PSTUDY.iterdir() if p.is_dir() and p.name != "__pycache__"):
        if not any(folder.glob("*.py")):
            continue  # templates
        assert folder.name in RANKS, f"{folder.name}/ has no place in RANKS"
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        assert doc and "\n" not in doc.strip(), f"{folder.name}/__init__.py: one line saying what lives there"


def test_module_names_do_not_differ_by_a_letter():
    def one_edit(a, b):
        if abs(len(a) - len(b)) > 1 or a == b:
            return False
        if len(a) == len(b):
            return sum(x != y for x, y in zip(a, b)) == 1
        short, long = sorted((a, b), key=len)
        return any(long[:i] + long[i + 1:] == short for i in range(len(long)))

    names = sorted({p.stem for p in PSTUDY.rglob("*.py") if p.stem != "__init__"})
    close = [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if one_edit(a, b)]
    assert close == []


def test_subcommands_do_not_import_each_other():
    for path in sorted((PSTUDY / "commands").glob("*.py")):
        others = {m for m in imported_modules(path) if m.startswith("pstudy.commands")}
        assert not others, f"{path.name} imports {sorted(others)}"


def test_libraries_do_not_import_subcommands():
    for path in sorted(PSTUDY.rglob("*.py")):
        if path.parent.name == "commands":
            continue
        if path.name in ("cli.py", "__main__.py"):
            continue
        commands = {m for m in imported_modules(path) if m.startswith("pstudy.commands")}
        assert not commands, f"{path.name} imports {sorted(commands)}"


def test_variant_names_come_from_the_vocabulary():
    """Adding a variant is its C file and one line in variants/LIST: no harness module may list
    the variants itself (a string literal equal to a variant's name outside vocabulary.py)."""
    from pstudy.store import vocabulary

    for path in sorted(PSTUDY.rglob("*.py")):
        if path.name == "vocabulary.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in vocabulary.VARIANTS:
                raise AssertionError(f"{path.relative_to(REPO)}:{node.lineno}: variant name {node.value!r} "
                                     "spelled out; use pstudy.vocabulary")


def test_every_variant_in_the_registry_has_its_source():
    from pstudy.store import vocabulary

    for name in vocabulary.VARIANTS:
        assert (REPO / "variants" / f"{name}.c").is_file(), name
