"""The build stage: a generated project folder -> firmware or a host executable.

``builder.py`` builds what ``make`` builds (the cmsis and host templates) and measures
the sections (``build_project``, ``section_sizes``); ``toolchain.py`` finds the programs
(the host and Arm compilers, make, ``arm-none-eabi-size``, QEMU), each missing one with
how to install it; ``zephyr.py`` builds zephyr-template projects with west or CMake and
Ninja against a Zephyr tree. The project stage (``aot/project/``) writes what they
build, the linker script included, and imports none of them.

The folder is ``building``, like ``planning`` and ``lowering``: a folder named ``build``
is taken for build output and skipped by linters and code tools.
"""
