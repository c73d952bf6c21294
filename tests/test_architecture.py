"""kerasgl's imports point one way: down the layers declared below.

Every import of every module under kerasgl/ is read with `ast`: at module level and inside
functions, relative and absolute (and importlib.import_module with a constant name). The test
fails on an import of a higher layer from a lower one, on any import cycle between modules, on a
function-level import of a kerasgl module outside the CLI's lazy loading. Optional third-party
dependencies may be imported anywhere. Modules are cut by idea, not by length: no line cap.
It also checks that every keras.ops operation lives under the kerasgl/keras_ops/ module named for
Keras's own (keras.src.ops.<module>), so "where is keras.ops.X?" has one answer.
"""
from __future__ import annotations

import ast
import os
import re
from collections import defaultdict

import pytest
from extras import require

# ---------------------------------------------------------------------------------------------
# The rule, declared once. Layers lowest first: (name, modules it holds, what it may import).
# A module belongs to the layer naming the longest prefix of its dotted name; "kerasgl" (the
# top: __init__, model, cli, demo, autotune, gl_dump, testing and new top-level features)
# holds whatever no lower layer names. A layer may import its own modules (the leaves may not:
# they import nothing of kerasgl), the layers it names, everything those may import, and
# single modules it names by their dotted path. Anyone may import kerasgl.errors.
# ---------------------------------------------------------------------------------------------
LAYERS = (
    ("leaves", ("kerasgl.errors", "kerasgl.settings", "kerasgl.cache_files"), ()),
    ("saving", ("kerasgl.saving",), ("leaves",)),            # file -> ModelSpec, no GL
    ("devices", ("kerasgl.devices",), ("leaves",)),          # device policies
    ("runtime", ("kerasgl.runtime",), ("devices",)),         # the GL context, programs, objects
    ("tensors", ("kerasgl.tensors",), ("runtime",)),         # Tensor, ownership scopes
    ("ops", ("kerasgl.ops",), ("tensors",)),                 # GPU ops
    ("layers", ("kerasgl.layers",), ("ops", "kerasgl.saving.spec")),
    ("keras_ops", ("kerasgl.keras_ops",), ("layers",)),       # keras.ops graph nodes
    ("plans", ("kerasgl.plans",), ("ops",)),                 # execution plans
    ("compiler", ("kerasgl.compiler",), ("keras_ops", "plans")),
    ("top", ("kerasgl",), ("*",)),                           # may import anything
)
USABLE_BY_ALL = ("kerasgl.errors",)
# The only modules that may import kerasgl modules inside functions: the CLI loads a command's
# modules when that command runs, so `kerasgl --help` stays fast.
LAZY_IMPORTS_ALLOWED = ("kerasgl.cli",)

PACKAGE = "kerasgl"
PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), PACKAGE)


# ---------------------------------------------------------------------------------------------
# Reading the imports
# ---------------------------------------------------------------------------------------------
def find_modules(package_dir: str, package: str = PACKAGE) -> dict:
    """Dotted module name -> file path of every .py under package_dir (a package's __init__.py
    is the package's own name)."""
    modules = {}
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        parts = os.path.relpath(root, package_dir).split(os.sep)
        prefix = [package] + [p for p in parts if p != "."]
        for name in sorted(files):
            if name.endswith(".py"):
                dotted = prefix if name == "__init__.py" else prefix + [name[:-3]]
                modules[".".join(dotted)] = os.path.join(root, name)
    return modules


class Import:
    """One import of a module of the package: where it is, what it names, whether it runs
    inside a function."""
    __slots__ = ("module", "target", "line", "in_function")

    def __init__(self, module, target, line, in_function):
        self.module, self.target, self.line, self.in_function = module, target, line, in_function

    def where(self, modules) -> str:
        return f"{shown_path(self.module, modules)}:{self.line}"


def shown_path(module: str, modules: dict) -> str:
    """A module's file as seen from the directory holding the package: kerasgl/ops/conv.py."""
    depth = module.count(".") + 1 + _is_package(module, modules)
    return "/".join(modules[module].split(os.sep)[-depth:])


def _is_package(module: str, modules: dict) -> bool:
    return modules[module].endswith("__init__.py")


def _resolve(name: str, modules: dict) -> str | None:
    """The package module an imported dotted name refers to (the longest prefix that is one)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _targets(node, module: str, modules: dict, package: str) -> list:
    """The package modules one Import / ImportFrom / import_module call imports."""
    if isinstance(node, ast.Import):
        return [_resolve(a.name, modules) for a in node.names if a.name.split(".")[0] == package]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".")
            if not _is_package(module, modules):
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        if source.split(".")[0] != package:
            return []
        # `from a import b`: the submodule a.b where there is one, else module a itself.
        return [f"{source}.{a.name}" if f"{source}.{a.name}" in modules
                else _resolve(source, modules) for a in node.names]
    name = node.args[0].value           # importlib.import_module("kerasgl....")
    return [_resolve(name, modules)] if name.split(".")[0] == package else []


def _is_import_module_call(node) -> bool:
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return (called == "import_module" and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str))


def read_imports(modules: dict, package: str = PACKAGE) -> list:
    """Every import of a package module made by a package module, in file order."""
    found = []
    for module, path in modules.items():
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=path)

        def visit(node, in_function):
            for child in ast.iter_child_nodes(node):
                inside = in_function or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, (ast.Import, ast.ImportFrom)) or _is_import_module_call(child):
                    for target in _targets(child, module, modules, package):
                        if target is not None and target != module:
                            found.append(Import(module, target, child.lineno, in_function))
                visit(child, inside)

        visit(tree, False)
    return found


# ---------------------------------------------------------------------------------------------
# The checks (functions of a module table and its imports, so the rule itself is testable)
# ---------------------------------------------------------------------------------------------
def _prefix_of(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str, layers=LAYERS) -> str:
    best = max((p for _, prefixes, _ in layers for p in prefixes if _prefix_of(module, p)),
               key=len, default=None)
    return next(name for name, prefixes, _ in layers if best in prefixes)


def allowed_targets(layer: str, layers=LAYERS) -> tuple[set, set]:
    """(layers, single modules) a module of `layer` may import."""
    grants = {name: allows for name, _, allows in layers}
    names, singles, todo = set(), set(), list(grants[layer])
    while todo:
        item = todo.pop()
        if item == "*":
            names.update(grants)
        elif item in grants:
            if item not in names:
                names.add(item)
                todo.extend(grants[item])
        else:
            singles.add(item)
    if layer != "leaves":
        names.add(layer)
    return names, singles


def upward_imports(imports, modules, layers=LAYERS) -> list:
    problems = []
    for imp in imports:
        if any(_prefix_of(imp.target, m) for m in USABLE_BY_ALL):
            continue
        source, target = layer_of(imp.module, layers), layer_of(imp.target, layers)
        names, singles = allowed_targets(source, layers)
        if target in names or any(_prefix_of(imp.target, m) for m in singles):
            continue
        problems.append(f"{imp.where(modules)}: {imp.module} ({source}) imports {imp.target} "
                        f"({target}){' inside a function' if imp.in_function else ''}")
    return problems


def function_level_imports(imports, modules) -> list:
    return [f"{imp.where(modules)}: {imp.module} imports {imp.target} inside a function"
            for imp in imports
            if imp.in_function and not any(_prefix_of(imp.module, m) for m in LAZY_IMPORTS_ALLOWED)]


def import_cycles(imports, modules) -> list:
    """One description per strongly connected group of modules that import each other (Tarjan),
    naming one cycle through it and the import lines that close it."""
    graph, lines = defaultdict(set), {}
    for imp in imports:
        graph[imp.module].add(imp.target)
        lines.setdefault((imp.module, imp.target), imp)
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def strongconnect(v):
        # Iterative Tarjan: deep package graphs must not hit Python's recursion limit.
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        group.add(w)
                        if w == node:
                            break
                    if len(group) > 1:
                        groups.append(group)

    for v in sorted(modules):
        if v not in index:
            strongconnect(v)
    problems = []
    for group in groups:
        cycle = _one_cycle(sorted(group)[0], graph, group)
        steps = [f"{a} -> {b} ({lines[a, b].where(modules)}"
                 f"{', in a function' if lines[a, b].in_function else ''})"
                 for a, b in zip(cycle, cycle[1:])]
        problems.append(f"cycle among {sorted(group)}: " + "; ".join(steps))
    return problems


def _one_cycle(start, graph, group) -> list:
    """A shortest path start -> ... -> start inside the group (breadth first)."""
    previous, frontier = {}, [start]
    while frontier:
        following = []
        for node in frontier:
            for w in sorted(graph[node] & group):
                if w == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start] + path[::-1][1:] + [start] if node != start else [start, start]
                if w not in previous:
                    previous[w] = node
                    following.append(w)
        frontier = following
    return [start]



# ---------------------------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def package():
    modules = find_modules(PACKAGE_DIR)
    return modules, read_imports(modules)


def _report(problems, what):
    assert not problems, f"{len(problems)} {what}:\n  " + "\n  ".join(problems)


def test_imports_point_down(package):
    modules, imports = package
    _report(upward_imports(imports, modules), "imports of a higher layer from a lower one")


def test_no_import_cycles(package):
    modules, imports = package
    _report(import_cycles(imports, modules), "import cycles")


def test_no_function_level_imports_of_kerasgl_modules(package):
    modules, imports = package
    _report(function_level_imports(imports, modules),
            "function-level imports of kerasgl modules (move them to the top of the module; "
            "only optional third-party dependencies and the CLI's lazy loading import late)")



def test_every_layer_names_real_modules(package):
    """A renamed package must not leave its layer empty (the rule would then check nothing)."""
    modules, imports = package
    for name, prefixes, _ in LAYERS:
        assert any(_prefix_of(m, p) for m in modules for p in prefixes), f"layer {name} is empty"
    assert layer_of("kerasgl.ops.dispatch") == "ops" and layer_of("kerasgl.model") == "top"
    # The reader sees relative, absolute and function-level imports of the real package.
    seen = {(i.module, i.target, i.in_function) for i in imports}
    assert ("kerasgl.ops.elementwise", "kerasgl.ops.dispatch", False) in seen
    assert any(i.module == "kerasgl.cli" and i.in_function for i in imports)


# What the package, its docs, scripts and tests must not speak of: anything outside the package
# (tickets, planning notes, the shared folder). Written so that this file does not match itself.
OUTSIDE_REFERENCES = re.compile(r"\b[Ii]ssue #?\d+|the issue'[s]|design[ ]card|\.\./shared")
TEXT_ROOTS = ("kerasgl", "docs", "scripts", "tests", "README.md")


def test_the_package_speaks_of_itself_only():
    repo = os.path.dirname(PACKAGE_DIR)
    found = []
    for root in TEXT_ROOTS:
        path = os.path.join(repo, root)
        files = [path] if os.path.isfile(path) else [
            os.path.join(d, f) for d, _, names in os.walk(path) for f in names
            if f.endswith((".py", ".md", ".sh", ".comp", ".glsl", ".txt", ".cfg"))]
        for name in sorted(files):
            with open(name, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, 1):
                    if OUTSIDE_REFERENCES.search(line):
                        found.append(f"{os.path.relpath(name, repo)}:{number}: {line.strip()}")
    _report(found, "mentions of things outside the package")


def _write_package(root, files: dict) -> dict:
    for relative, text in files.items():
        path = root / PACKAGE / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return find_modules(str(root / PACKAGE))


def test_the_rule_catches_what_it_forbids(tmp_path):
    """The checks run on a small made-up package: each kind of violation is found, and only
    those (a layer may import down, anyone may import errors, the CLI may import late)."""
    modules = _write_package(tmp_path, {
        "__init__.py": "from .model import Model\n",
        "errors.py": "", "demo.py": "",
        "model.py": "from .ops import add\n",
        "cli.py": "def main():\n    from . import model\n",
        "ops/__init__.py": "from .add import add\n",
        "ops/add.py": ("from ..tensors.tensor import Tensor\nfrom kerasgl import errors\n"
                       "def add():\n    import numpy\n"),
        "tensors/__init__.py": "",
        "tensors/tensor.py": ("from ..runtime import context\n"
                              "def to_texture():\n    from ..ops import add\n"),
        "runtime/__init__.py": "",
        "runtime/context.py": ("import importlib\n"
                               "def tuning():\n    importlib.import_module('kerasgl.demo')\n"),
        "layers/__init__.py": "from ..saving import spec\nfrom ..saving.h5 import read\n",
        "saving/__init__.py": "", "saving/spec.py": "", "saving/h5.py": "read = 1\n",
    })
    imports = read_imports(modules)
    upward = sorted(p.split(": ", 1)[1] for p in upward_imports(imports, modules))
    assert upward == [
        "kerasgl.layers (layers) imports kerasgl.saving.h5 (saving)",
        "kerasgl.runtime.context (runtime) imports kerasgl.demo (top) inside a function",
        "kerasgl.tensors.tensor (tensors) imports kerasgl.ops.add (ops) inside a function"], upward
    lazy = sorted(p.split(": ", 1)[1] for p in function_level_imports(imports, modules))
    assert lazy == ["kerasgl.runtime.context imports kerasgl.demo inside a function",
                    "kerasgl.tensors.tensor imports kerasgl.ops.add inside a function"], lazy
    cycles = import_cycles(imports, modules)
    assert len(cycles) == 1, cycles
    assert "cycle among ['kerasgl.ops.add', 'kerasgl.tensors.tensor']: kerasgl.ops.add -> " \
           "kerasgl.tensors.tensor (kerasgl/ops/add.py:1); kerasgl.tensors.tensor -> " \
           "kerasgl.ops.add (kerasgl/tensors/tensor.py:3, in a function)" == cycles[0], cycles


# ---------------------------------------------------------------------------------------------
# Where things live: every keras.ops operation under the module Keras itself puts it in
# ---------------------------------------------------------------------------------------------
def test_every_keras_op_lives_under_its_keras_module():
    """An op node class sits in kerasgl/keras_ops/<m>/ (or <m>.py) where keras.src.ops.<m> defines
    one of the operations it registers: "where is keras.ops.searchsorted?" is answered by
    Keras's own module (numpy) and then by the family file inside it. A class that runs
    operations of several Keras modules (the elementwise UnaryOp runs numpy's exp and nn's relu
    on one kernel) lives with one of them."""
    import importlib
    import inspect

    keras = require("keras")
    from kerasgl.keras_ops.node import OP_CLASSES

    keras_module_of = {}
    for name in ("numpy", "nn", "math", "linalg", "image", "core"):
        module = importlib.import_module(f"keras.src.ops.{name}")
        for class_name, cls in vars(module).items():
            if inspect.isclass(cls) and cls.__module__ == module.__name__:
                keras_module_of.setdefault(class_name, set()).add(name)
    assert keras.__version__ and len(keras_module_of) > 250
    by_class = defaultdict(set)
    for op_name, cls in OP_CLASSES.items():
        by_class[cls].add(op_name)
    misplaced = []
    for cls, op_names in by_class.items():
        parts = cls.__module__.split(".")
        assert parts[:2] == ["kerasgl", "keras_ops"], f"{cls.__name__} is in {cls.__module__}"
        homes = set().union(*(keras_module_of.get(n, set()) for n in op_names))
        if homes and parts[2] not in homes:
            misplaced.append(f"{cls.__module__}.{cls.__name__} runs {sorted(op_names)}, which "
                             f"Keras defines in keras.src.ops.{'/'.join(sorted(homes))}")
    _report(misplaced, "op nodes outside their Keras module")
