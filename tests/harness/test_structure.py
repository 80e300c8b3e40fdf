"""The harness's structure, checked: subcommands do not import each other, the libraries do not
import subcommands, and no module but the vocabulary spells a variant's name."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PSTUDY = REPO / "harness" / "pstudy"


def imported_modules(path):
    """Every pstudy module a file imports (absolute names), wherever the import statement is."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {m for m in out if m.startswith("pstudy")}


def test_subcommands_do_not_import_each_other():
    for path in sorted((PSTUDY / "commands").glob("*.py")):
        others = {m for m in imported_modules(path) if m.startswith("pstudy.commands")}
        assert not others, f"{path.name} imports {sorted(others)}"


def test_libraries_do_not_import_subcommands():
    for path in sorted(PSTUDY.glob("*.py")):
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
