#!/usr/bin/env bash
# The whole test suite: unit, toolchain (cross-compile) and emulator (QEMU) tiers.
# Set-up first, so a fresh machine needs only this command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Soak runs (many minutes each) and the TFLite Micro tier (its first run builds TFLM's
# library, ~6 min) are left out unless asked for: a later -m in "$@" wins, e.g.
# bash scripts/test.sh -m soak tests/robustness, bash scripts/test.sh -m tflm
exec env PYTHONPATH="$(pwd -P)${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest -n "${AOT_TEST_JOBS:-2}" \
  -m "not soak and not tflm" "$@"
