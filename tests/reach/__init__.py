"""Tests of reachability: buffers and constants only where their targets reach, copy steps."""
