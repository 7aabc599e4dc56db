#!/usr/bin/env bash
# Install everything aot needs on a Debian machine with Python 3.11:
# Debian packages (C toolchains, QEMU) and the Python package with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

# cmake .. gperf: Zephyr builds of --template zephyr projects (the test tier tests/zephyr).
# libstdc++-arm-none-eabi-newlib: TensorFlow Lite Micro, the benchmarks' peer
# (benchmarks/tflm_peer.py), is C++.
DEBIAN_PACKAGES=(make gcc gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi
                 qemu-system-arm cmake ninja-build device-tree-compiler gperf
                 libstdc++-arm-none-eabi-newlib)

missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

PYTHON="${PYTHON:-python3}"
# Install (again) unless this very checkout is the aot that Python imports.
# (Run from / so that the checkout itself does not shadow the installed package.)
installed_from=$(cd / && "$PYTHON" -c 'import os, aot, tvm, tflite, onnx, onnxruntime, yaml
import ai_edge_litert, jsonschema, serial, flatbuffers, xdist
import cmsis_pack_manager, xmlschema, tornado, psutil, ethosu.vela, elftools, pykwalify, west
import PIL
print(os.path.dirname(os.path.dirname(os.path.realpath(aot.__file__))))' 2>/dev/null || true)
if [ "$installed_from" != "$(pwd -P)" ]; then
  echo "setup: installing the aot Python package and its dependencies"
  "$PYTHON" -m pip install -q -e ".[dev]"
fi
echo "setup: done ($("$PYTHON" -m aot --version))"
