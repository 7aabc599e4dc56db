"""Write tests/golden/library_digests.json: the digests of every reference build (the four
MLPerf Tiny models on every emulated board and the host, with and without the example
NPU where the board has it), which tests/golden/test_library_digests.py compares against.

    python3 scripts/make_golden.py            # every build (a few minutes)
    python3 scripts/make_golden.py KEY ...    # only these builds, e.g. vww_96_int8/host

Write it only when a change to the generated C or metadata.json is meant; a refactoring
leaves it as it is (aot/testing/golden.py says what the digests cover).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aot.testing.golden import GOLDEN_FILE, build_digests, golden_builds, read_golden, write_golden


def main(keys: list[str]) -> int:
    builds = golden_builds()
    known = {b.key for b in builds}
    unknown = [k for k in keys if k not in known]
    if unknown:
        print(f"unknown build(s) {', '.join(unknown)}; the builds are {', '.join(sorted(known))}")
        return 2
    digests = read_golden() if keys and GOLDEN_FILE.exists() else {}
    with tempfile.TemporaryDirectory(prefix="aot-golden-") as work:
        for build in builds:
            if keys and build.key not in keys:
                continue
            print(build.key, flush=True)
            digests[build.key] = build_digests(build, Path(work))
    write_golden(dict(sorted(digests.items())))
    print(f"wrote {len(digests)} builds to tests/golden/{GOLDEN_FILE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
