"""The layers of docs/architecture.md, held against every module under backend/zmtplab.

The rules are read from the document's two tables ("may import, of ours" and "may not import,
outside ours"), so the document and this check cannot disagree. Every `import` and
`from ... import` is seen, absolute or relative, at module level, inside functions and under
`if TYPE_CHECKING:`, and so are `importlib.import_module`/`__import__` calls whose target can be
resolved. A module also takes no other module's private (underscore) names; `KNOWN_PRIVATE` lists
today's exceptions, and may only shrink. Nor does it read a private attribute of another module's
objects (`obj._name` where `_name` is nothing of its own).

No import cycle between modules, whatever the layers say: every import above counts, those inside functions
and under `if TYPE_CHECKING:` too. No module over `MAX_MODULE_LINES` lines and no class over `MAX_CLASS_LINES`;
`KNOWN_LARGE` lists today's exceptions, and may only shrink.

The frontend's table ("frontend layer") is held against every `import`/`export ... from` of
`frontend/js` the same way.

`.venv/bin/python tests/test_layers.py` prints the import graph between layers.
"""

from __future__ import annotations

import ast
import fnmatch
import posixpath
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCE_ROOT = REPO / "backend"
PACKAGE = "zmtplab"
DOC = REPO / "docs" / "architecture.md"
FRONTEND = REPO / "frontend"

# (importing module, module taken from, private name): the private names some modules take from
# another module today. Issue 18 wants them gone: remove an entry when its import goes (the test
# fails until you do); never add one.
KNOWN_PRIVATE: frozenset[tuple[str, str, str]] = frozenset()

MAX_MODULE_LINES = 900
MAX_CLASS_LINES = 600
# (module, class; None: the module itself): what is over the sizes today. Remove an entry when it fits (the
# test fails until you do); never add one.
KNOWN_LARGE: frozenset[tuple[str, str | None]] = frozenset()


# ---- the rules, as the document states them


@dataclass(frozen=True)
class Rules:
    """Layers (each some module prefixes), what each may import of ours, and what not from outside."""

    prefixes: dict[str, tuple[str, ...]]
    allowed: dict[str, frozenset[str]]
    banned: dict[str, frozenset[str]] = field(default_factory=dict)

    def layer_of(self, module: str) -> str | None:
        """The layer whose prefix is the longest dotted prefix of `module` (None: no layer has it).

        The package itself holds only its own `__init__.py`: a new subpackage needs a row of its own."""
        best, best_len = None, -1
        for layer, prefixes in self.prefixes.items():
            for prefix in prefixes:
                within = module.startswith(prefix + ".") and prefix != PACKAGE
                if (module == prefix or within) and len(prefix) > best_len:
                    best, best_len = layer, len(prefix)
        return best


def _table(text: str, header: str) -> list[list[str]]:
    """The body rows of the Markdown table whose header row starts with `header`, as cell lists."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.replace(" ", "").startswith(header.replace(" ", "")):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in row.strip().strip("|").split("|")])
            return rows
    raise AssertionError(f"{DOC.name} has no table with the header {header!r}")


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def read_rules(text: str) -> Rules:
    """The rules of docs/architecture.md's "Layers and import rules" section."""
    prefixes: dict[str, tuple[str, ...]] = {}
    allowed: dict[str, frozenset[str]] = {}
    for cells in _table(text, "| layer | modules | may import, of ours |"):
        (layer,) = _names(cells[0])
        prefixes[layer] = tuple(_names(cells[1]))
        allowed[layer] = frozenset(_names(cells[2]))
    banned = {_names(cells[0])[0]: frozenset(_names(cells[1]))
              for cells in _table(text, "| layer | may not import, outside ours |")}
    return Rules(prefixes, allowed, banned)


# ---- what a module imports


@dataclass
class Scan:
    """What one module's source imports: of ours and from outside, private names taken, and
    dynamic imports whose target cannot be known."""

    ours: list[tuple[str, int]] = field(default_factory=list)  # (dotted target, line)
    outside: list[tuple[str, int]] = field(default_factory=list)  # (top-level name, line)
    private: list[tuple[str, str, int]] = field(default_factory=list)  # (module, name, line)
    unresolved: list[int] = field(default_factory=list)  # lines


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


class _Scanner:
    def __init__(self, module: str, is_package: bool, modules: frozenset[str]) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.modules = modules
        self.scan = Scan()
        self.bound: dict[str, str] = {}  # a local name -> the module of ours it is bound to

    def absolute(self, name: str | None, level: int) -> str:
        """The absolute dotted name of `from <level dots><name> import ...`."""
        if not level:
            return name or ""
        parts = self.package.split(".")
        base = parts[: len(parts) - (level - 1)]
        return ".".join(base + ([name] if name else []))

    def add(self, target: str, line: int) -> None:
        if target == PACKAGE or target.startswith(PACKAGE + "."):
            self.scan.ours.append((target, line))
        elif target:
            self.scan.outside.append((target.split(".")[0], line))

    def run(self, tree: ast.AST) -> Scan:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.add(alias.name, node.lineno)
                    if alias.asname and alias.name in self.modules:
                        self.bound[alias.asname] = alias.name
            elif isinstance(node, ast.ImportFrom):
                self.import_from(node)
            elif isinstance(node, ast.Call):
                self.dynamic(node)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in self.bound and _is_private(node.attr)):
                self.scan.private.append((self.bound[node.value.id], node.attr, node.lineno))
        return self.scan

    def import_from(self, node: ast.ImportFrom) -> None:
        source = self.absolute(node.module, node.level)
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            if submodule in self.modules:
                self.add(submodule, node.lineno)
                self.bound[alias.asname or alias.name] = submodule
                continue
            self.add(source, node.lineno)
            if _is_private(alias.name) and source.startswith(PACKAGE):
                self.scan.private.append((source, alias.name, node.lineno))

    def dynamic(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name not in ("import_module", "__import__") or not node.args:
            return
        target = self.dynamic_target(node)
        if target is None:
            self.scan.unresolved.append(node.lineno)
        else:
            self.add(target, node.lineno)

    def dynamic_target(self, node: ast.Call) -> str | None:
        """The module an import_module/__import__ call loads, or the known part of its name."""
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            text = arg.value
        elif isinstance(arg, ast.JoinedStr) and arg.values:
            first = arg.values[0]
            if (isinstance(first, ast.FormattedValue) and isinstance(first.value, ast.Name)
                    and first.value.id == "__name__"):
                text = self.module
            elif isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("."):
                text = first.value
            else:
                return None
            if len(arg.values) > 1 and isinstance(arg.values[1], ast.Constant):
                text += arg.values[1].value
        else:
            return None
        if not text.startswith("."):
            return text.rstrip(".")
        package = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "package"), None)
        if not (isinstance(package, ast.Name) and package.id in ("__name__", "__package__")):
            return None  # (relative to a package we cannot see)
        if package.id == "__name__" and self.package != self.module:
            return None  # a plain module's __name__ is no package
        level = len(text) - len(text.lstrip("."))
        return self.absolute(text[level:].rstrip(".") or None, level)


def scan_source(module: str, source: str, *, is_package: bool = False,
                modules: frozenset[str] = frozenset()) -> Scan:
    """What `source`, the text of `module`, imports (`modules`: the modules of ours that exist)."""
    return _Scanner(module, is_package, modules).run(ast.parse(source))


def tree_modules() -> Iterator[tuple[str, Path, bool]]:
    """(dotted name, path, is a package) of every module under backend/zmtplab."""
    for path in sorted((SOURCE_ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SOURCE_ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        yield ".".join(parts), path, is_package


# ---- the checks


def problems(module: str, scan: Scan, rules: Rules) -> list[str]:
    """Every rule `module` breaks, one line each."""
    out = []
    layer = rules.layer_of(module)
    if layer is None:
        return [f"{module}: no layer of docs/{DOC.name} holds it (give it a row in the layers table)"]
    for target, line in scan.ours:
        theirs = rules.layer_of(target)
        if theirs != layer and theirs not in rules.allowed[layer]:
            out.append(f"{module}:{line} imports {target}: {layer} may not import {theirs}")
    for name, line in scan.outside:
        if name in rules.banned.get(layer, ()):
            out.append(f"{module}:{line} imports {name}: {layer} may not import {name}")
    for line in scan.unresolved:
        out.append(f"{module}:{line}: a dynamic import this check cannot resolve (name it with a literal)")
    return out


def scan_tree() -> dict[str, Scan]:
    found = list(tree_modules())
    modules = frozenset(name for name, _, _ in found)
    return {name: scan_source(name, path.read_text(), is_package=is_package, modules=modules)
            for name, path, is_package in found}


@pytest.fixture(scope="module")
def rules() -> Rules:
    return read_rules(DOC.read_text())


@pytest.fixture(scope="module")
def scans() -> dict[str, Scan]:
    return scan_tree()


def test_the_document_names_every_layer_it_allows(rules: Rules) -> None:
    assert {"engine", "capture", "peers", "web", "pipeline", "cli"} <= set(rules.prefixes)
    for layer, allowed in rules.allowed.items():
        assert allowed <= set(rules.prefixes), f"{layer} may import a layer the table lacks: {allowed}"
    assert "asyncio" in rules.banned["engine"]


def test_every_module_has_a_layer(rules: Rules, scans: dict[str, Scan]) -> None:
    assert len(scans) > 50
    assert [m for m in scans if rules.layer_of(m) is None] == []


def test_no_module_breaks_the_layer_rules(rules: Rules, scans: dict[str, Scan]) -> None:
    broken = [p for module, scan in sorted(scans.items()) for p in problems(module, scan, rules)]
    assert broken == [], "\n".join(broken)


def test_private_names_stay_private(scans: dict[str, Scan]) -> None:
    taken = {(module, source, name) for module, scan in scans.items() for source, name, _ in scan.private}
    new = sorted(taken - KNOWN_PRIVATE)
    assert new == [], f"modules take other modules' private names: {new}"
    gone = sorted(KNOWN_PRIVATE - taken)
    assert gone == [], f"no longer taken: remove them from KNOWN_PRIVATE: {gone}"


# ---- no import cycle between modules


def module_graph(scans: dict[str, Scan]) -> dict[str, dict[str, int]]:
    """module -> {module of ours it imports: the first line that does}; a `from package import name` is an
    import of the package (its `__init__`), one of a submodule an import of that module."""
    graph: dict[str, dict[str, int]] = {module: {} for module in scans}
    for module, scan in scans.items():
        for target, line in scan.ours:
            while target and target not in scans:
                target = target.rpartition(".")[0]
            if target and target != module:
                graph[module].setdefault(target, line)
    return graph


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The modules that import each other, directly or through others: each strongly connected set of more
    than one module (Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph.get(module, {}):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == module:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def describe_cycle(graph: dict[str, dict[str, int]], members: list[str]) -> str:
    """The imports that join a cycle's modules, `module:line -> module` each."""
    inside = set(members)
    return "; ".join(f"{module}:{line} -> {target}" for module in members
                     for target, line in sorted(graph[module].items()) if target in inside)


def test_no_import_cycle(scans: dict[str, Scan]) -> None:
    graph = module_graph(scans)
    assert len(graph) > 50
    cycles = import_cycles(graph)
    assert cycles == [], "modules import each other: " + " | ".join(describe_cycle(graph, c) for c in cycles)


@pytest.mark.parametrize("sources", [
    {"zmtplab.peers.a": "from .b import B\n", "zmtplab.peers.b": "def f():\n    from .a import A\n"},
    {"zmtplab.peers.a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
     "zmtplab.peers.b": "from . import c\n", "zmtplab.peers.c": "import zmtplab.peers.a as a\n"},
    {"zmtplab.pipeline.rows": "from .runs import runs_to_batches\n",
     "zmtplab.pipeline.runs": "from . import rows\n", "zmtplab.pipeline.schemas": ""},
    {"zmtplab.peers": "from .a import A\n", "zmtplab.peers.a": "from . import helper\n"},
])
def test_the_check_reports_an_import_cycle(sources: dict[str, str]) -> None:
    modules = frozenset(sources)
    scans = {m: scan_source(m, text, is_package=m.count(".") == 1, modules=modules) for m, text in sources.items()}
    cycles = import_cycles(module_graph(scans))
    assert len(cycles) == 1 and len(cycles[0]) >= 2, cycles
    assert "->" in describe_cycle(module_graph(scans), cycles[0])


def test_the_check_lets_one_way_imports_pass() -> None:
    sources = {"zmtplab.peers.a": "from .b import B\nfrom .c import C\n", "zmtplab.peers.b": "from .c import C\n",
               "zmtplab.peers.c": "from ..engine import events\nfrom . import c\n",
               "zmtplab.engine": "import importlib\nimportlib.import_module(f'{__name__}.{name}')\n"}
    modules = frozenset(sources)
    scans = {m: scan_source(m, text, is_package=m == "zmtplab.engine", modules=modules)
             for m, text in sources.items()}
    assert import_cycles(module_graph(scans)) == []


# ---- no module or class too large to take in


def oversized(module: str, source: str) -> list[tuple[str, str | None, int]]:
    """(module, class or None, lines) of the module if it is over `MAX_MODULE_LINES` and of each class of it
    over `MAX_CLASS_LINES` (a class's lines: from `class` to its last statement)."""
    found: list[tuple[str, str | None, int]] = []
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append((module, None, lines))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > MAX_CLASS_LINES:
                found.append((module, node.name, size))
    return found


def test_no_module_or_class_is_too_large() -> None:
    found = [big for name, path, _ in tree_modules() for big in oversized(name, path.read_text())]
    new = sorted(f"{m}{'.' + c if c else ''}: {n} lines" for m, c, n in found if (m, c) not in KNOWN_LARGE)
    limits = f"(modules up to {MAX_MODULE_LINES} lines, classes up to {MAX_CLASS_LINES}: split it by job)"
    assert new == [], f"too large {limits}: {new}"
    gone = sorted(KNOWN_LARGE - {(m, c) for m, c, _ in found}, key=str)
    assert gone == [], f"no longer too large: remove them from KNOWN_LARGE: {gone}"


def test_the_size_check() -> None:
    small_class = "class A:\n" + "    x = 1\n" * (MAX_CLASS_LINES - 1)
    big_class = "class B:\n" + "    x = 1\n" * MAX_CLASS_LINES
    assert oversized("zmtplab.fake", small_class) == []
    assert oversized("zmtplab.fake", big_class) == [("zmtplab.fake", "B", MAX_CLASS_LINES + 1)]
    long_module = small_class + "\n" * (MAX_MODULE_LINES - MAX_CLASS_LINES + 1)
    assert oversized("zmtplab.fake", long_module) == [("zmtplab.fake", None, MAX_MODULE_LINES + 1)]


# ---- the checker itself, on modules that break the rules

MODULES = frozenset({"zmtplab.capture.pcapfile", "zmtplab.capture.dissect", "zmtplab.cli.pipeline",
                     "zmtplab.engine.events", "zmtplab.web.app"})


@pytest.mark.parametrize(("module", "is_package", "source", "expected"), [
    ("zmtplab.engine.fake", False, "from ..capture import dissect\n", "engine may not import capture"),
    ("zmtplab.engine", True, "from ..decode import parse_hex\n", "engine may not import decode"),
    ("zmtplab.engine.fake", False, "import zmtplab.peers.tcp as tcp\n", "engine may not import peers"),
    ("zmtplab.capture.fake", False, "def f():\n    from zmtplab.peers.tcp import TcpPeer\n",
     "capture may not import peers"),
    ("zmtplab.peers.fake", False,
     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..web.models import Event\n",
     "peers may not import web"),
    ("zmtplab.pipeline.fake", False, "from ..cli import pipeline\n", "pipeline may not import cli"),
    ("zmtplab.pipeline.fake", False, "from ..web import app\n", "pipeline may not import web"),
    ("zmtplab.web.fake", False, "from zmtplab.cli.output import write_jsonl\n", "web may not import cli"),
    ("zmtplab.lessons.fake", False, "from ..pipeline.rows import STAGE_SCHEMA\n", "lessons may not import pipeline"),
    ("zmtplab.capture.fake", False, "import importlib\nimportlib.import_module('zmtplab.web.app')\n",
     "capture may not import web"),
    ("zmtplab.capture.fake", False, "import importlib\nimportlib.import_module('..cli', __package__)\n",
     "capture may not import cli"),
    ("zmtplab.capture.fake", False, "import importlib\nimportlib.import_module(name)\n", "cannot resolve"),
    ("zmtplab.engine.fake", False, "import asyncio\n", "engine may not import asyncio"),
    ("zmtplab.engine.fake", False, "def now():\n    from time import monotonic\n", "engine may not import time"),
])
def test_the_check_reports_an_upward_import(rules: Rules, module: str, is_package: bool, source: str,
                                            expected: str) -> None:
    found = problems(module, scan_source(module, source, is_package=is_package, modules=MODULES), rules)
    assert len(found) == 1 and expected in found[0], found


@pytest.mark.parametrize(("module", "is_package", "source"), [
    ("zmtplab.engine.fake", False, "from .events import Expert\nimport struct\n"),
    ("zmtplab.engine", True, "import importlib\nimportlib.import_module(f'{__name__}.{name}')\n"),
    ("zmtplab.capture.fake", False, "import asyncio\nfrom ..engine.dissector import ConnectionDissector\n"),
    ("zmtplab.web.fake", False, "from ...pipeline.job import run_pipeline\nfrom ..lessons import player\n"),
    ("zmtplab.cli", True, "import importlib\nimportlib.import_module(f'.{name}', __name__)\n"),
    ("zmtplab.cli.fake", False, "from ..web.server import serve\nfrom ..pipeline import job\n"),
    ("zmtplab.pipeline.submit", False, "from zmtplab.cli.pipeline import main\n"),
])
def test_the_check_lets_downward_imports_pass(rules: Rules, module: str, is_package: bool, source: str) -> None:
    assert problems(module, scan_source(module, source, is_package=is_package, modules=MODULES), rules) == []


@pytest.mark.parametrize("source", [
    "from ..capture.pcapfile import _SHB\n",
    "from ..capture import pcapfile\nmagic = pcapfile._SHB\n",
    "import zmtplab.capture.pcapfile as pf\nmagic = pf._SHB\n",
])
def test_the_check_sees_private_names_taken(source: str) -> None:
    scan = scan_source("zmtplab.pipeline.fake", source, modules=MODULES)
    assert [(m, n) for m, n, _ in scan.private] == [("zmtplab.capture.pcapfile", "_SHB")]


def test_a_new_package_needs_a_row(rules: Rules) -> None:
    found = problems("zmtplab.newpart.thing", scan_source("zmtplab.newpart.thing", "from ..engine import events\n"),
                     rules)
    assert found == [f"zmtplab.newpart.thing: no layer of docs/{DOC.name} holds it (give it a row in the layers table)"]
    assert rules.layer_of("zmtplab") == "package"


def test_dunder_names_are_not_private() -> None:
    assert scan_source("zmtplab.web.fake", "from .. import __doc__\n", modules=MODULES).private == []


# ---- private attributes: `obj._name` where this module does not define `_name`

# What namedtuples offer under an underscore, and the outside libraries' internals we lean on on purpose.
PUBLIC_UNDERSCORE = frozenset({"_make", "_replace", "_asdict", "_fields",
                               "_running_processes"})  # (pyshark's capture: its tshark processes, to stop them)


def foreign_private_reads(source: str) -> list[tuple[str, int]]:
    """(name, line) of each `obj._name` read where `obj` is not `self`/`cls`/`super()`, `_name` is defined
    nowhere in this module (no `def`, `class`, assignment, parameter or `__slots__` entry) and `obj` is not a
    name imported from outside our package. The import check sees `module._name`; this one sees another
    module's object reached into (`session.runtime._wake`)."""
    tree = ast.parse(source)
    defined: set[str] = set()
    outside: set[str] = set()
    strings: Counter[str] = Counter()  # private names written as strings (`__slots__`, getattr by name)
    by_name: list[tuple[ast.Call, str]] = []  # getattr/setattr/hasattr(obj, "_name", ...)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                and _is_private(node.args[1].value)):
            by_name.append((node, node.args[1].value))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            defined.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _is_private(node.value):
            strings[node.value] += 1
        elif isinstance(node, ast.Import):
            outside.update((a.asname or a.name).split(".")[0] for a in node.names if not a.name.startswith(PACKAGE))
        elif isinstance(node, ast.ImportFrom) and not node.level and not (node.module or "").startswith(PACKAGE):
            outside.update(a.asname or a.name for a in node.names)
    # A name reached by getattr only is no name of this module's (`getattr(reasm, "_flows")`).
    asked = Counter(name for _, name in by_name)
    named = defined | {name for name, n in strings.items() if n > asked[name]}

    def foreign(owner: ast.expr, name: str) -> bool:
        if name in named or name in PUBLIC_UNDERSCORE:
            return False
        if isinstance(owner, ast.Name) and (owner.id in ("self", "cls") or owner.id in outside):
            return False
        return not (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super")

    found = [(node.attr, node.lineno) for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _is_private(node.attr)
             and node.attr not in strings and foreign(node.value, node.attr)]
    found += [(name, call.lineno) for call, name in by_name if foreign(call.args[0], name)]
    return sorted(found, key=lambda f: f[1])


def test_no_module_reads_another_modules_private_attributes() -> None:
    found = [f"{name}:{line} reads .{attr}" for name, path, _ in tree_modules()
             for attr, line in foreign_private_reads(path.read_text())]
    assert found == [], "modules reach into other modules' objects: " + "; ".join(found)


@pytest.mark.parametrize("source, expected", [
    ("def kill(peer):\n    for p in peer._protocols.values():\n        p.abort()\n", [("_protocols", 2)]),
    ("class A:\n    def f(self):\n        return self.core.socket._send\n", [("_send", 3)]),
    ("class A:\n    def __init__(self):\n        self._n = 0\n    def f(self, other):\n        return other._n\n",
     []),
    ("from pyspark import SparkContext\nactive = SparkContext._active_spark_context\n", []),
    ("from collections import namedtuple\nP = namedtuple('P', 'a')\np = P._make([1])\n", []),
    ("def peek(reasm):\n    return getattr(reasm, '_flows', None)\n", [("_flows", 2)]),
    ("class A:\n    __slots__ = ('_n',)\n    def f(self, other):\n        return getattr(other, '_n', 0)\n", []),
])
def test_the_attribute_check(source: str, expected: list[tuple[str, int]]) -> None:
    assert foreign_private_reads(source) == expected


# ---- the frontend

JS_IMPORT = re.compile(r"""(?:\b(?:import|export)\b[^;'"]*?\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]""")


def read_frontend_rules(text: str) -> Rules:
    """The frontend's layers: file patterns under frontend/ and what each may import."""
    prefixes, allowed = {}, {}
    for cells in _table(text, "| frontend layer | files | may import |"):
        (layer,) = _names(cells[0])
        prefixes[layer] = tuple(_names(cells[1]))
        allowed[layer] = frozenset(_names(cells[2]))
    return Rules(prefixes, allowed)


def frontend_layer(rules: Rules, path: str) -> str | None:
    """The layer of `path` (relative to frontend/, e.g. `js/core/bytes.js`)."""
    for layer, patterns in rules.prefixes.items():
        if any(fnmatch.fnmatch(path, p + "*" if p.endswith("/") else p) for p in patterns):
            return layer
    return None


def frontend_problems(path: str, source: str, rules: Rules) -> list[str]:
    """Every rule the module at `path` (relative to frontend/) breaks, one line each."""
    layer = frontend_layer(rules, path)
    if layer is None:
        return [f"frontend/{path}: no frontend layer of {DOC.name} holds it"]
    out = []
    for match in JS_IMPORT.finditer(source):
        spec = match.group(1)
        if not spec.startswith("."):
            continue  # (no bare specifiers: nothing is installed; a URL is not ours)
        target = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
        theirs = frontend_layer(rules, target)
        if theirs != layer and theirs not in rules.allowed[layer]:
            line = source.count("\n", 0, match.start()) + 1
            out.append(f"frontend/{path}:{line} imports {spec}: {layer} may not import {theirs}")
    return out


def frontend_modules() -> list[str]:
    return sorted(p.relative_to(FRONTEND).as_posix() for p in (FRONTEND / "js").rglob("*.js"))


def test_no_frontend_module_breaks_the_layer_rules() -> None:
    rules = read_frontend_rules(DOC.read_text())
    modules = frontend_modules()
    assert len(modules) > 30
    broken = [p for path in modules for p in frontend_problems(path, (FRONTEND / path).read_text(), rules)]
    assert broken == [], "\n".join(broken)


@pytest.mark.parametrize(("path", "source", "expected"), [
    ("js/core/fake.js", "import { drawTree } from '../views/tree.js';\n", "core may not import views"),
    ("js/core/fake.js", "import {\n  startCapture,\n} from '../app/capture/capture.js';\n",
     "core may not import app-capture"),
    ("js/views/fake.js", "export { x } from '../lessons/views.js';\n", "views may not import lessons"),
    ("js/lessons/fake.js", "const m = await import('../app/lessons/lessons.js');\n",
     "lessons may not import app-lessons"),
    ("js/app/capture/fake.js", "import { Dataset } from '../playground/playground.js';\n",
     "app-capture may not import app-playground"),
    ("js/app/shared/fake.js", "import { startCorpus } from '../corpus/corpus.js';\n",
     "app-shared may not import app-corpus"),
])
def test_the_frontend_check_reports_an_upward_import(path: str, source: str, expected: str) -> None:
    found = frontend_problems(path, source, read_frontend_rules(DOC.read_text()))
    assert len(found) == 1 and expected in found[0], found


def test_the_frontend_check_lets_downward_imports_pass() -> None:
    rules = read_frontend_rules(DOC.read_text())
    source = "import { a } from '../core/bytes.js';\nimport { b } from './tree.js';\n// from '../app/x.js'\n"
    assert frontend_problems("js/views/fake.js", source, rules) == []
    source = "import { startCapture } from './app/capture/capture.js';\n"
    assert frontend_problems("js/main-fake.js", source, rules) == []
    source = "import { a } from '../shared/workbench.js';\nimport { b } from './capture-file.js';\n"
    assert frontend_problems("js/app/capture/fake.js", source, rules) == []


# ---- the graph, for people


def layer_graph(rules: Rules, scans: dict[str, Scan]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for module, scan in scans.items():
        layer = rules.layer_of(module) or "?"
        graph[layer]
        for target, _ in scan.ours:
            theirs = rules.layer_of(target) or "?"
            if theirs != layer:
                graph[layer].add(theirs)
    return graph


if __name__ == "__main__":
    the_rules = read_rules(DOC.read_text())
    the_scans = scan_tree()
    order = list(the_rules.prefixes)
    for layer, uses in sorted(layer_graph(the_rules, the_scans).items(), key=lambda kv: order.index(kv[0])):
        print(f"{layer:<9}-> {', '.join(sorted(uses, key=order.index)) or '(nothing)'}")
    broken = [p for module, scan in sorted(the_scans.items()) for p in problems(module, scan, the_rules)]
    print("\n".join(broken) or "no module breaks the rules", file=sys.stderr if broken else sys.stdout)
    sys.exit(1 if broken else 0)
