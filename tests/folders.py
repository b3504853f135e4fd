"""Folders of stereo pairs on disk for tests: ``left/NNN.png`` and ``right/NNN.png`` (three-digit
names: a folder of pairs a user gives, not a recording)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np


def pairs_folder(
    root: Path,
    count: int = 5,
    *,
    size: tuple[int, int] = (48, 64),
    shift: int = 3,
    right_sizes: dict[int, tuple[int, int]] | None = None,
    damaged: Collection[int] = (),
) -> Path:
    """``count`` random-texture pairs of ``size`` (rows, columns), the right view the left one
    rolled ``shift`` px left; frames in ``right_sizes`` get a right image of another size (a pair
    that does not match), frames in ``damaged`` a right file that is not an image."""
    import cv2

    rng = np.random.default_rng(1)
    for side in ("left", "right"):
        (root / side).mkdir(parents=True)
    for i in range(count):
        image = rng.integers(0, 255, (*size, 3), dtype=np.uint8)
        cv2.imwrite(str(root / "left" / f"{i:03d}.png"), image)
        right = root / "right" / f"{i:03d}.png"
        if i in damaged:
            right.write_bytes(b"not a png")
        elif right_sizes and i in right_sizes:
            cv2.imwrite(str(right), rng.integers(0, 255, (*right_sizes[i], 3), dtype=np.uint8))
        else:
            cv2.imwrite(str(right), np.roll(image, -shift, axis=1))
    return root
