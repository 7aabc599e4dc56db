"""Finding the user's Ethos-U core driver and CMSIS-Core headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from aot.backends.ethos_u.driver import driver_defines, find_driver, npu_arch
from aot.errors import ConfigError, ToolchainError
from aot.testing.shared import shared_path

pytestmark = pytest.mark.unit


@pytest.fixture
def env() -> dict[str, str]:
    return {
        "ETHOSU_DRIVER_DIR": str(shared_path("ethos-u-core-driver")),
        "CMSIS_CORE_DIR": str(shared_path("cmsis-core")),
    }


def test_found_through_the_environment(env: dict[str, str]) -> None:
    paths = find_driver(env=env)
    assert (paths.driver / "include/ethosu_driver.h").is_file()
    assert (paths.cmsis_include / "cmsis_compiler.h").is_file()


@pytest.mark.parametrize("variable", ["ETHOSU_DRIVER_DIR", "CMSIS_CORE_DIR"])
def test_a_missing_variable_is_named(env: dict[str, str], variable: str) -> None:
    del env[variable]
    with pytest.raises(ToolchainError) as info:
        find_driver(env=env)
    message = str(info.value)
    assert message.startswith(f"{variable} is not set: point it at")
    assert "\n" not in message


def test_options_override_the_environment(env: dict[str, str], tmp_path: Path) -> None:
    env["ETHOSU_DRIVER_DIR"] = str(tmp_path)  # not a driver: the option must win
    paths = find_driver(driver_dir=shared_path("ethos-u-core-driver"), env=env)
    assert paths.driver == shared_path("ethos-u-core-driver").resolve()
    with pytest.raises(ToolchainError, match=r"CMSIS_CORE_DIR=.* holds no Include/cmsis_compiler"):
        find_driver(shared_path("ethos-u-core-driver"), cmsis_core_dir=tmp_path, env=env)


def test_a_folder_that_is_not_the_driver(env: dict[str, str], tmp_path: Path) -> None:
    env["ETHOSU_DRIVER_DIR"] = str(tmp_path)
    with pytest.raises(ToolchainError, match="is not an Ethos-U core driver: it has no include/"):
        find_driver(env=env)


def test_defines_follow_the_npu_name() -> None:
    defines = driver_defines("ethos-u55-128", 0x58102000, 56)
    assert defines["ETHOSU55"] == "1" and defines["ETHOSU_MACS"] == "128"
    assert defines["AOT_ETHOSU_BASE"] == "0x58102000u" and defines["AOT_ETHOSU_IRQ"] == "56"
    assert npu_arch("ethos-u65-512") == ("u65", 512)
    with pytest.raises(ConfigError, match="not an Ethos-U name"):
        npu_arch("example-npu")
