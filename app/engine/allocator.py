"""Keep the C allocator from handing big tensors back to the system after every frame.

glibc serves allocations above a dynamic threshold (128 kB to start) with fresh ``mmap``
pages and returns them on ``free``; every frame then pays page faults to touch its image
and activation buffers again. On the 2-core VM this project is measured on, that was a
quarter of a Bi3D-light frame at 480 x 640 (14.4 -> 10.5 ms for one plane, same run).
PyTorch's CPU tuning guides recommend jemalloc or tcmalloc for the same reason; this is the
same effect without another library: buffers up to 32 MB come from the heap, and freed
heap memory is kept for the next frame.

Only glibc on Linux; elsewhere (macOS, Windows, musl) it does nothing. Set
``BI3D_STUDIO_DEFAULT_MALLOC=1`` to leave the allocator alone.
"""

from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed value on 64-bit systems
TRIM_THRESHOLD = 1 << 30

_tuned: bool | None = None


def tune_allocator() -> bool:
    """Apply the settings once per process; True when glibc took them."""
    global _tuned
    if _tuned is None:
        _tuned = _apply()
    return _tuned


def _apply() -> bool:
    if not sys.platform.startswith("linux") or os.environ.get("BI3D_STUDIO_DEFAULT_MALLOC") == "1":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
