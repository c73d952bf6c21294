"""The documentation site (mkdocs.yml) builds with `mkdocs build --strict`: every page in the nav
exists, every link between pages resolves, and the API reference (docs/api.md) renders the
docstring of every public name of kerasgl/__init__.py. Needs the docs extra (pip install
'.[docs]'); outside CI a machine without it skips these tests, under CI=true they fail."""
import ast
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def public_names() -> list[str]:
    """The names kerasgl/__init__.py makes public (imported or assigned, no leading underscore),
    read from its source: importing kerasgl is not needed to know them."""
    with open(os.path.join(REPO, "kerasgl", "__init__.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    names = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            names += [alias.asname or alias.name for alias in node.names]
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def documented_names() -> list[str]:
    with open(os.path.join(REPO, "docs", "api.md"), encoding="utf-8") as handle:
        return re.findall(r"^::: kerasgl\.(\w+)\s*$", handle.read(), re.MULTILINE)


def test_api_page_has_a_directive_for_every_public_name():
    names = public_names()
    assert "load_model" in names and "Tensor" in names     # the parse found the imports
    documented = documented_names()
    missing = [n for n in names if n not in documented]
    assert not missing, f"docs/api.md has no '::: kerasgl.NAME' for {missing}"
    unknown = [n for n in documented if n not in names]
    assert not unknown, f"docs/api.md documents names kerasgl does not export: {unknown}"


def test_nav_lists_every_page_and_every_page_exists():
    with open(os.path.join(REPO, "mkdocs.yml"), encoding="utf-8") as handle:
        nav = re.findall(r"^\s*-\s[^:]+:\s*([\w/]+\.md)\s*$", handle.read(), re.MULTILINE)
    pages = sorted(f for f in os.listdir(os.path.join(REPO, "docs")) if f.endswith(".md"))
    for wanted in ("index.md", "quickstart.md", "api.md", "memory.md", "layers.md",
                   "performance.md", "architecture.md", "custom_layers.md", "serving.md",
                   "distributed.md", "profiling.md", "settings.md"):
        assert wanted in nav, f"mkdocs.yml's nav lacks {wanted}"
    assert sorted(nav) == pages, f"nav {sorted(nav)} against docs/ {pages}"


def test_site_builds_strict_without_warnings(tmp_path):
    try:
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
        import material  # noqa: F401
    except ImportError as exc:
        if IN_CI:
            raise
        pytest.skip(f"the docs extra is not installed ({exc}); pip install '.[docs]'")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                          os.path.join(REPO, "mkdocs.yml"), "-d", str(site)],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log
    warnings = [line for line in log.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]
    assert not warnings, "\n".join(warnings)
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    # Rendered from the docstrings (not typed into api.md): load_model's and Model.predict's.
    assert "Load a Keras model file" in api
    assert "Run the model on" in api and "get_weights" in api
    assert "Run the model and return GPU tensors" in api         # model(x), from a mixin
    for page in ("index.html", "quickstart/index.html", "memory/index.html",
                 "performance/index.html"):
        assert (site / page).is_file(), page
