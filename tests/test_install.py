"""A plain (non-editable) `pip install .` into a fresh virtual environment finds and compiles the
shaders: kerasgl is imported from that environment, in a directory outside the repository, and
runs ops whose shaders ship as package data (kerasgl/_shaders)."""
import importlib.util
import os
import shutil
import site
import subprocess
import sys
import sysconfig

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("kerasgl", "shaders", "setup.cfg", "pyproject.toml", "README.md", "MANIFEST.in", "LICENSE")


def _copy_sources(target):
    """The files a source distribution would hold, copied so the build never writes into the
    shared checkout (setuptools makes build/ and *.egg-info next to setup.cfg)."""
    os.makedirs(target)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        path = os.path.join(REPO, name)
        if os.path.isdir(path):
            shutil.copytree(path, os.path.join(target, name), ignore=ignore)
        elif os.path.exists(path):
            shutil.copy2(path, target)


def _can_build_without_isolation():
    """setuptools can build a wheel here without downloading anything."""
    try:
        import setuptools
    except ImportError:
        return False
    version = tuple(int(p) for p in setuptools.__version__.split(".")[:2] if p.isdigit())
    return importlib.util.find_spec("wheel") is not None or version >= (70, 1)


CHECK = r"""
import os, sys
import numpy as np
import kerasgl as kg
from kerasgl.runtime import shaders
prefix = os.path.realpath(sys.prefix)
assert os.path.realpath(kg.__file__).startswith(prefix), kg.__file__
assert os.path.realpath(shaders.shader_dir()).startswith(prefix), shaders.shader_dir()
with kg.tidy():
    x = kg.random_normal([64, 33], seed=3)
    got = ((x * 2.0 + 1.0).relu().T.sum(axis=1)).numpy()
    want = np.maximum(x.numpy() * 2 + 1, 0).T.sum(axis=1)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)
print("INSTALLED OK", kg.memory().num_programs, "programs from", shaders.shader_dir())
"""


def test_plain_pip_install_finds_and_compiles_the_shaders(tmp_path):
    source, venv_dir, elsewhere = tmp_path / "src", tmp_path / "venv", tmp_path / "elsewhere"
    _copy_sources(str(source))
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv_dir)], check=True, timeout=60)
    python = str(venv_dir / "bin" / "python")
    # The fresh environment borrows this one's dependencies (numpy, moderngl, ...) through a .pth
    # file, so nothing is downloaded; its own site-packages still comes first on sys.path.
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    outer = [p for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]] if os.path.isdir(p)]
    with open(os.path.join(purelib, "_outer_dependencies.pth"), "w") as handle:
        handle.write("\n".join(dict.fromkeys(outer)) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    flags = ["--no-build-isolation"] if _can_build_without_isolation() else []
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", *flags,
         str(source)], cwd=str(elsewhere), env=env, capture_output=True, text=True, timeout=240)
    assert install.returncode == 0, install.stdout + install.stderr
    run = subprocess.run([python, "-c", CHECK], cwd=str(elsewhere), env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "INSTALLED OK" in run.stdout and str(venv_dir) in run.stdout
