#!/usr/bin/env bash
# The device check for a session lent an NVIDIA machine (the `device` tool's `run`): the test
# suite and the benchmarks on the real GPU through NVIDIA's EGL. NOT YET RUN on a GPU.
#
# Prepare here, once, in the repo root (both folders are git-ignored, carried with `carry`):
#   echo /.gl/ >>.git/info/exclude; echo /.whl/ >>.git/info/exclude; echo /.gpu/ >>.git/info/exclude
#   mkdir -p .gl .whl .gpu /tmp/amd64/partial
#   o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
#   apt-get $o update; (cd .gl && apt-get $o download libegl1 libglvnd0 libopengl0 libgl1 libglx0)
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl moderngl glcontext
#   KERAS_BACKEND=jax python -c "import keras; keras.applications.MobileNetV2(weights=None).save('.gpu/mobilenetv2.keras')"
# Then: run(command="bash scripts/gpu_check.sh", carry=[".gl", ".whl", ".gpu"], timeout_s=540)
set -uo pipefail
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$vendor" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -c "import kerasgl; print(kerasgl.info())" 2>&1 | tee "$OUT/info.txt" || exit 1
# Tests that need no Keras at run time (Keras is not on the device image).
python3 -m pytest -q -p no:cacheprovider tests/test_tensor.py tests/test_memory.py \
  tests/test_driver_objects.py tests/test_conformance_kerasjs.py tests/test_keras2_files.py \
  2>&1 | tee "$OUT/tests.log"
# Which kernel variants this GPU prefers (views or SSBO loads, ...): printed and cached, so that
# the benchmark after it runs with them (kerasgl/autotune.py).
XDG_CACHE_HOME=$OUT/cache python3 -m kerasgl.cli tune 2>&1 | tee "$OUT/tune.log"
XDG_CACHE_HOME=$OUT/cache python3 scripts/bench_gpu.py --model .gpu/mobilenetv2.keras \
  --json "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/bench_gpu.log"
