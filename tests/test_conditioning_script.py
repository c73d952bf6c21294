"""scripts/application_conditioning.py runs and measures what it says: Keras's float32 logits of a
test model against its float64 ones (a real float64 run: the difference is not zero), and
kerasgl's against both."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "scripts", "application_conditioning.py")
NUMBER = r"([0-9.e+-]+)"


def test_one_application_with_kerasgl():
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    proc = subprocess.run([sys.executable, SCRIPT, "MobileNetV3Small", "--kerasgl"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"^# .+, \d+ CPUs; keras 3", proc.stdout, re.M), proc.stdout
    line = re.search(rf"^MobileNetV3Small +max\|logit\| +{NUMBER} +Keras f32-f64 +{NUMBER} "
                     rf"\({NUMBER}\) +kerasgl-f64 +{NUMBER} \({NUMBER}\) +kerasgl-Keras f32 +"
                     rf"{NUMBER} \({NUMBER}\)", proc.stdout, re.M)
    assert line, proc.stdout
    logit, keras32, keras32_share, gl64, gl64_share, gl32, gl32_share = map(float, line.groups())
    assert logit > 0.1
    # float32 rounds where float64 does not: an exact zero would mean no float64 run was made.
    assert 0 < keras32 < 1e-4 and 0 < gl64 < 1e-4 and 0 < gl32 < 1e-4
    assert keras32_share < 1 and gl64_share < 1 and gl32_share < 1
