"""The package's layout (issue 23): its import graph has no cycle, no hand-written module is
longer than MAX_LINES, and docs/design.md's module map lists exactly the package's modules."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpcompiler"
MAX_LINES = 800


def _modules():
    """{dotted name: path} of the hand-written modules (generated/ is emitted, not written)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).with_suffix("")
        if "generated" in relative.parts:
            continue
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        found[".".join(parts)] = path
    return found


def _imports(name, path, modules):
    """The package modules that ``name`` imports, at its top or inside its functions."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        found |= {target for target in targets if target in modules and target != name}
    return found


def _cycle(graph):
    """One import cycle of ``graph`` as a list of modules, or None (depth-first search)."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for successor in sorted(graph[node]):
            if state.get(successor) == "open":
                return stack[stack.index(successor):] + [successor]
            if successor not in state and (found := visit(successor)):
                return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_package_has_no_import_cycle():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "gpcompiler.compiler.analysis.core" in graph["gpcompiler.compiler.analysis.box"]
    assert _cycle(graph) is None


def test_no_hand_written_module_is_longer_than_the_limit():
    lengths = {name: path.read_text().count("\n") for name, path in _modules().items()}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}


def test_the_module_map_lists_exactly_the_packages_modules():
    design = (ROOT / "docs" / "design.md").read_text()
    section = design.split("## Module map", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(gpcompiler/[\w/]+\.py)`", section))
    written = {path.relative_to(ROOT).as_posix() for path in _modules().values()}
    assert listed == written


def test_every_mutant_of_the_catalog_still_applies_and_names_existing_tests():
    """benchmarks/mutants.py: each mutation's text is found exactly once in its function
    (a stale entry would silently test nothing), and each killing test it names exists."""
    from benchmarks import mutants
    for mutation in mutants.CATALOG:
        _, stale = mutants.mutate_text((ROOT / mutation.path).read_text(), mutation)
        assert stale is None, (mutation.name, stale)
        for test in mutation.tests:
            path, _, name = test.partition("::")
            names = {node.name for node in ast.walk(ast.parse((ROOT / path).read_text()))
                     if isinstance(node, ast.FunctionDef)}
            assert name.split("[")[0] in names, (mutation.name, test)
