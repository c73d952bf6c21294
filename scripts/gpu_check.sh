#!/usr/bin/env bash
# One command for a machine with a GPU: kerasgl's tests under its own renderer, `kerasgl tune`,
# the device's peaks, the micro-benchmarks and a profile of MobileNetV2 and ResNet50 (batch 1,
# per kernel: time, GFLOP/s, GB/s, % of the peaks, invocations in work groups of >= 64), all in
# one JSON file, $OUT/gpu_check.json (scripts/gpu_check.py), with the logs next to it.
#
#     OUT=/tmp/gpu_out bash scripts/gpu_check.sh
#
# On a machine set up as scripts/install.sh --test does, that is all. On a bare device machine
# (Python and numpy, no GL libraries, no network), prepare here once, in the repo root (the
# folders are git-ignored and travel with the `device` tool's `carry`):
#   echo /.gl/ >>.git/info/exclude; echo /.whl/ >>.git/info/exclude; echo /.gpu/ >>.git/info/exclude
#   mkdir -p .gl .whl .gpu /tmp/amd64/partial
#   o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
#   apt-get $o update; (cd .gl && apt-get $o download libegl1 libglvnd0 libopengl0 libgl1 libglx0)
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl moderngl glcontext
#   KERAS_BACKEND=jax python -c "import keras; keras.applications.MobileNetV2(weights=None).save('.gpu/MobileNetV2.keras')"
# (ResNet50's file, 100 MB, exceeds what `carry` takes: it is built here only where Keras is
# installed.) Then: run(command="bash scripts/gpu_check.sh", carry=[".gl", ".whl", ".gpu"]).
set -uo pipefail
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
PY=${PYTHON:-python3}
if [ -d .gl ]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$vendor" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor
if [ -d .whl ]; then
  $PY -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 KERAS_BACKEND=jax XDG_CACHE_HOME=$OUT/cache
$PY -c "import kerasgl; print(kerasgl.info())" 2>&1 | tee "$OUT/info.txt" || exit 1

# The models: built with Keras where it is installed, else the files prepared in .gpu/.
models=()
if $PY -c "import keras" 2>/dev/null; then
  for name in MobileNetV2 ResNet50; do
    $PY -c "import keras; keras.applications.$name(weights=None).save('$OUT/$name.keras')" \
      && models+=(--model "$OUT/$name.keras")
  done
  # With Keras: the kernel, layer and model tests against it, under this GPU's own policy
  # (plain_policy_checks.py then checks its work groups), then the rest of the selection.
  tests=(tests/plain_policy_checks.py tests/test_matmul.py tests/test_layers_conv.py
         tests/test_tuning.py tests/test_profiler.py tests/test_device_peak.py
         "tests/test_whole_models.py::test_application_matches_keras[MobileNetV2]"
         "tests/test_whole_models.py::test_application_matches_keras[ResNet50]"
         tests/test_tensor.py tests/test_memory.py tests/test_driver_objects.py
         tests/test_texture_operands.py tests/test_storage_float16.py
         tests/test_activations_float16.py)
else
  for f in .gpu/*.keras; do [ -f "$f" ] && models+=(--model "$f"); done
  # Without Keras: the tests that need none.
  tests=(tests/test_matmul.py tests/test_device_peak.py tests/test_tensor.py tests/test_memory.py
         tests/test_driver_objects.py tests/test_conformance_kerasjs.py tests/test_keras2_files.py)
fi
$PY -m pytest -q -p no:cacheprovider -rfE "${tests[@]}" 2>&1 | tee "$OUT/tests.log"
$PY scripts/gpu_check.py --out "$OUT/gpu_check.json" --tests-log "$OUT/tests.log" "${models[@]}" \
  2>&1 | tee "$OUT/gpu_check.log"
