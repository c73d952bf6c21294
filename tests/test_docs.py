"""The examples of docs/memory.md, docs/quickstart.md and README.md's tour run, each block on its own
(as a reader pasting one block would run it: a fresh namespace per block, in one process), print
what their comments say, and leave nothing behind."""
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RUNNER = r'''
import re, sys
import kerasgl as kg
document = sys.argv[1]
text = open(document, encoding="utf-8").read()
blocks = re.findall(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
assert blocks, "no python examples"
for number, block in enumerate(blocks, 1):
    # A fresh namespace per block: each must run pasted alone (its own imports and data).
    exec(compile(block, f"{document} (example {number})", "exec"), {"__name__": "__main__"})
print("LIVE TENSORS AT THE END:", kg.memory().num_tensors)
'''


def run_examples(document):
    env = {**os.environ, "PYTHONPATH": REPO}
    env.pop("KERASGL_TRACK_LEAKS", None)
    run = subprocess.run([sys.executable, "-c", RUNNER, document], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "LIVE TENSORS AT THE END: 0" in run.stdout, run.stdout
    return run.stdout


def test_memory_guide_examples_print_what_they_say():
    out = run_examples("docs/memory.md")
    assert "4000000\n0\n" in out
    assert "Tensor of shape [1000, 1000] (float32) is disposed" in out
    assert "(512,)" in out
    assert "caught: something went wrong" in out
    assert "leaked tensors: 400" in out
    assert "4 live tensor(s), 776 bytes:" in out
    assert re.search(r"3 created at docs/memory.md \(example \d+\):\d+ in load_batch: 3x \[8, 8\]", out)
    assert re.search(r"1 created at docs/memory.md \(example \d+\):\d+ in <module>: \[2\]", out)
    assert "GL_MAX_SHADER_STORAGE_BLOCK_SIZE = " in out


@pytest.mark.parametrize("document", ["README.md"])
def test_readme_tour_runs(document):
    run_examples(document)


def test_quickstart_examples_print_what_they_say():
    out = run_examples("docs/quickstart.md")
    assert "(None, 8, 8, 1) (None, 10)\n" in out
    # conv1's kernel as the file stores it (3x3, 1 channel in), its filters from its config
    assert re.search(r"^\(3, 3, 1, (\d+)\) \1 \d+$", out, re.MULTILINE), out
    assert "Tensor (4, 10)" in out
    assert "['digits_cnn'] True\n()\n" in out


def test_layer_list_is_current():
    """docs/layers.md is generated from the registries; a new layer must regenerate it."""
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "scripts", "list_layers.py")
    result = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
