"""Builds the C runtime with a fixture model for the toolchain tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from device_c_build import (
    C_FLAGS,
    FIXTURES,
    INCLUDES,
    RUNTIME,
    HostBuilder,
    compile_c,
    runtime_sources,
)

from aot.device import DeviceClient, PipeTransport


@pytest.fixture(scope="session")
def host_app(tmp_path_factory: pytest.TempPathFactory) -> HostBuilder:
    """build(model, *flags) -> path of the host executable serving fixtures/<model>.c."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("host gcc not found; install it with: apt-get install gcc")
    out_dir = tmp_path_factory.mktemp("host_apps")
    cache: dict[tuple[str, ...], Path] = {}

    def build(model: str, *flags: str) -> Path:
        key = (model, *flags)
        if key not in cache:
            exe = out_dir / f"{model}_{len(cache)}"
            compile_c(
                [
                    gcc,
                    *C_FLAGS,
                    "-O2",
                    "-g",
                    *INCLUDES,
                    *flags,
                    *map(str, runtime_sources()),
                    str(RUNTIME / "ports" / "host" / "port.c"),
                    str(FIXTURES / f"{model}.c"),
                    "-o",
                    str(exe),
                ]
            )
            cache[key] = exe
        return cache[key]

    return build


@pytest.fixture
def start(host_app: HostBuilder) -> Iterator[Callable[..., DeviceClient]]:
    """start(model, *flags) -> DeviceClient talking to a fresh host process."""
    clients: list[DeviceClient] = []

    def _start(model: str, *flags: str) -> DeviceClient:
        transport = PipeTransport.spawn([str(host_app(model, *flags))])
        clients.append(DeviceClient(transport, timeout=10.0))
        return clients[-1]

    yield _start
    for client in clients:
        client.close()
