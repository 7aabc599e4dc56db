"""vww on mps2_an385 built with --profile with the cmsis and the zephyr template: each
operator's share of the inference (benchmarks/bench_zephyr.py, run_profile)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_zephyr import run_profile as run

__all__ = ["run"]
