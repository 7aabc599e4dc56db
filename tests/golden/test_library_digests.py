"""The generated model library and metadata.json of every reference build are byte-for-byte
what tests/golden/library_digests.json records (aot/testing/golden.py): a refactoring
changes neither. When a change to the generated C or the metadata is meant, write the
digests again with ``python3 scripts/make_golden.py [KEY ...]`` and commit them with it.
"""

from __future__ import annotations

import pytest

from aot.testing.golden import (
    build_digests,
    differences,
    golden_builds,
    read_golden,
)

BUILDS = golden_builds()

pytestmark = [pytest.mark.golden, pytest.mark.slow]


def test_the_golden_file_covers_every_build() -> None:
    assert sorted(read_golden()) == sorted(b.key for b in BUILDS)


@pytest.mark.parametrize("build", BUILDS, ids=[b.key for b in BUILDS])
def test_library_is_unchanged(build, tmp_path) -> None:
    expected = read_golden()[build.key]
    found = build_digests(build, tmp_path)
    changed = list(differences(expected, found))
    assert not changed, (
        f"{build.key}: the build's output differs from tests/golden/library_digests.json: "
        + "; ".join(changed)
        + f" (if meant: python3 scripts/make_golden.py {build.key})"
    )
