"""Keep the C allocator from handing big tensors back to the system after every frame.

glibc serves allocations above a dynamic threshold (128 kB to start) with fresh ``mmap``
pages and returns them on ``free``; every frame then pays page faults to touch its image
and activation buffers again. On the 2-core VM this project is measured on, that was a
quarter of a Bi3D-light frame at 480 x 640 (14.4 -> 10.5 ms for one plane, same run).
PyTorch's CPU tuning guides recommend jemalloc or tcmalloc for the same reason; this is the
same effect without another library: buffers come from the heap, and freed heap memory (up to
1 GB of it) is kept for the next frame.

glibc's threshold stops at 32 MB, and continuous depth holds bigger buffers (29 full-resolution
planes at Motorcycle's 576 x 768 are 51 MB, 65 at 480 x 640 84 MB), so ``mmap`` is turned off
altogether (``M_MMAP_MAX`` 0): the readout of 65 planes at 480 x 640 took 117-146 ms with the
32 MB threshold and 69-70 ms without ``mmap`` (same frames, this VM), Motorcycle's default
continuous answer 711-825 -> 633-766 ms, peak memory about the same (785-849 against 802-870
MB). glibc still maps memory where the heap cannot grow, and a worker thread's arena maps blocks
above its 64 MB heaps (measured in a thread: Motorcycle's readout 94 -> 54 ms, 65 planes no gain).

Only glibc on Linux; elsewhere (macOS, Windows, musl) it does nothing. Set
``BI3D_STUDIO_DEFAULT_MALLOC=1`` to leave the allocator alone.
"""

from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
M_MMAP_MAX = -4
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
    settings = ((M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_MMAP_MAX, 0))
    return all(bool(mallopt(param, value)) for param, value in settings)
