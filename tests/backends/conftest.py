"""The out-of-tree test backend package, made visible through an entry point only.

``tinyacc_pkg/`` is a plain package aot knows nothing about; the fixture writes a
``.dist-info`` with its ``entry_points.txt`` into a temporary folder, which goes on the
``PYTHONPATH`` of the aot subprocesses, as ``pip install`` would leave it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ENTRY_POINTS = """\
[aot.backends]
tinyacc = aot_tinyacc:TinyAcc
tinynpu = aot_tinyacc:TinyNpu
greedy = aot_tinyacc:Greedy
broken = aot_tinyacc:Broken
fails-prepare = aot_tinyacc:FailsInPrepare
fails-patterns = aot_tinyacc:FailsInPatterns
fails-predicate = aot_tinyacc:FailsInPredicate
fails-runtime = aot_tinyacc:FailsInRuntime
fails-report = aot_tinyacc:FailsInReport
refuses-predicate = aot_tinyacc:RefusesInPredicate
tinyclash = aot_tinyacc:Clash
tinysingle = aot_tinyacc:Single
"""


@pytest.fixture(scope="session")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("site")
    info = site / "aot_tinyacc-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: aot-tinyacc\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    env = dict(os.environ)
    paths = [str(REPO), str(site), str(HERE / "tinyacc_pkg")]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env
