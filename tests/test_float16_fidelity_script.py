"""scripts/float16_fidelity.py --activations (docs/float16.md's table of float16 activations),
run as the docs run it, on the trained digits CNN (its storage-dtype table is tested in
tests/test_storage_float16.py)."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = r"([0-9.e+-]+)"


def test_activations_table_of_the_digits_cnn():
    """The machine's facts, the activations table's header, then the digits row: the plan of
    float16 activations holds fewer bytes than the float32 one's (not half: the inputs and
    outputs stay float32), kerasgl float32 is Keras's within float32 rounding, and float16
    activations (alone, and with float16 weights) moved the logits (halves were kept), by
    little, every sample's top-1 unchanged."""
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "float16_fidelity.py"),
                           "digits", "--activations"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "KERAS_BACKEND": "jax"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout
    assert re.search(r"^# .+, \d+ CPUs, load average [0-9. ]+; .+; kerasgl ", out, re.M)
    assert ("| model | params | plan f32 | plan f16 | ratio | max abs y | f32 diff | act diff | "
            "act rel | act top-1 | both diff | both rel | both top-1 |") in out
    row = re.search(r"^\| digits \| 21,546 \| .+ kB \| .+ kB \| " + NUMBER + r" \| [0-9.e+-]+ \| "
                    + r" \| ".join([NUMBER] * 3) + r" \| 24/24 \| " + NUMBER + r" \| " + NUMBER
                    + r" \| 24/24 \|$", out, re.M)
    assert row, out
    ratio, f32_diff, act_diff, act_rel, both_diff, both_rel = map(float, row.groups())
    assert 0.5 <= ratio < 0.9
    assert f32_diff < 1e-4 and f32_diff < act_diff and f32_diff < both_diff
    assert act_rel < 2e-3 and both_rel < 2e-3
    assert re.search(r"^# largest act diff relative to max abs y: .+; largest both diff "
                     r"relative to max abs y: .+; load average", out, re.M)
