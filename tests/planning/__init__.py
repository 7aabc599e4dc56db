"""Tests of the memory planning stage (aot.planning)."""
