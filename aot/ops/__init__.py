"""Operator kernels as TE computes (``int8``) and their fixed-point helpers (``fixedpoint``)."""
