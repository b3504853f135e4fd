"""Memory estimates before large allocations: refuse with the figure instead of failing inside numpy.

An 8000 x 6000 pair in continuous mode needs about 12 GiB for its plane probabilities alone;
numpy or torch would fail half-way with "Unable to allocate", or the machine would swap.
``require`` compares an estimate with the memory this machine has free and raises a
``UserError`` that gives both figures and what to change. Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

from app.engine.errors import UserError

# the share of free memory one request may take: the app, the OS and other programs keep the rest
USABLE_SHARE = 0.8
FALLBACK_BYTES = 8 << 30  # when the platform does not say


def available_bytes(meminfo: str | None = None) -> int:
    """Memory this process could take now: Linux ``MemAvailable``, else physical memory."""
    if meminfo is None:
        try:
            meminfo = Path("/proc/meminfo").read_text()
        except OSError:
            meminfo = ""
    for line in meminfo.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return FALLBACK_BYTES


def gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def require(needed: float, what: str, advice: str, available: int | None = None) -> None:
    """Raise a ``UserError`` when ``needed`` bytes exceed the usable share of free memory.

    ``what`` names the allocation ("plane probabilities for 65 planes at 6000 x 8000");
    ``advice`` says what makes it smaller ("use a smaller image or fewer levels").
    """
    free = available_bytes() if available is None else available
    if needed > USABLE_SHARE * free:
        raise UserError(f"{what} needs about {gib(needed)}, {gib(free)} is free here; {advice}")


__all__ = ["available_bytes", "gib", "require"]
