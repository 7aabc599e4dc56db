"""The out-of-tree test backend (tests/backends/tinyacc_pkg) through its entry point."""

from tests.backends.conftest import plugin_env  # noqa: F401  (a fixture)
