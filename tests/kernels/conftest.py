"""Run the Triton kernels on the CPU through Triton's interpreter.

``triton.jit`` picks interpreted or compiled kernels when a kernel module is first imported,
and optiforge imports its kernel modules lazily on the first ``backend="triton"`` call, so
setting the variable here (at collection, before any test runs) is enough. On a CUDA machine set
``TRITON_INTERPRET=0`` explicitly to test the compiled kernels instead.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
