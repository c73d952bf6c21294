#!/usr/bin/env bash
# Installs kerasgl into ./.venv on a fresh Debian/Ubuntu machine, with Mesa's EGL + llvmpipe so
# it runs without a GPU (a real GPU's EGL driver is used instead when one is installed).
#   bash scripts/install.sh          # runtime only (for `kerasgl demo`)
#   bash scripts/install.sh --test   # plus the test and docs extras (pytest, keras, jax, mkdocs)
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
ldconfig -p | grep -q 'libEGL.so.1' || need_apt+=(libegl1)
ldconfig -p | grep -q 'libEGL_mesa.so.0' || need_apt+=(libegl-mesa0)
ldconfig -p | grep -q 'libGL.so.1' || need_apt+=(libgl1)
ls /usr/lib/*/dri/swrast_dri.so >/dev/null 2>&1 || need_apt+=(libgl1-mesa-dri)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip setuptools wheel
if [ "${1:-}" = "--test" ]; then
  .venv/bin/python -m pip install -q '.[test,docs]'
  # keras_hub, the reference of tests/test_kerashub*.py, without its tensorflow-text requirement
  # (all of TensorFlow): the test extra holds the dependencies it imports.
  .venv/bin/python -m pip install -q --no-deps keras-hub==0.32.0
else
  .venv/bin/python -m pip install -q .
fi
