"""`kerasgl demo` runs the shipped model without Keras or scikit-learn and matches Keras."""
import configparser
import fnmatch
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "kerasgl", "_data")

# Run the CLI with keras, jax and sklearn made unimportable: the demo must need none of them.
BLOCKED = ("import sys\n"
           "for name in ('keras', 'jax', 'sklearn', 'tensorflow'):\n"
           "    sys.modules[name] = None\n"
           "from kerasgl.cli import main\n"
           "sys.exit(main(['demo', '--repeats', '3']))\n")


def test_demo_runs_without_keras_and_matches_keras():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True,
                            env=env, timeout=300)
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr}"
    correct, total = map(int, re.search(r"correct: (\d+)/(\d+)", out).groups())
    assert total == 24 and correct >= 20
    assert "predictions identical to Keras's: True" in out
    difference = float(re.search(r"probability difference: ([0-9.e+-]+)", out).group(1))
    assert difference <= 1e-4
    assert "load to first prediction" in out and "steady state" in out
    assert "every buffer and texture released: yes" in out
    for stage in ("before loading:", "after predicting:", "after dispose:"):
        assert stage in out and "driver:" in out


def test_demo_data_ships_in_the_wheel():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    assert "kerasgl._data" in config["options"]["packages"].split()
    patterns = [p.strip() for p in config["options.package_data"]["kerasgl._data"].split(",")]
    for name in ("digits_cnn.keras", "digits_samples.npz", "digits_cnn.json"):
        assert os.path.isfile(os.path.join(DATA, name))
        assert any(fnmatch.fnmatch(name, p) for p in patterns), (name, patterns)
