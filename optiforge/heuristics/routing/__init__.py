"""Constrained routing: TSPTW and TSPDL instances, the trusted validator, LazyMask decoding.

Numpy only (what the sandbox loads); the CP-SAT / PyVRP references need the ``routing`` extra and
the learned policy (``policy``, ``train``) needs torch; both are imported only where used.
"""
