"""What a calibration target is: something found in an image as corners with ids, and a way
to pair the corners the left and right camera saw of one board."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True, eq=False)
class Detection:
    """A target found in one image: M corner ids and their M x 2 float32 pixels."""

    ids: np.ndarray
    points: np.ndarray


class Target(Protocol):
    """A calibration target: a chessboard (`ChessboardTarget`) or a ChArUco board."""

    @property
    def inner(self) -> tuple[int, int]:
        """Inner corners (cols, rows) of the full board."""
        ...

    def describe(self) -> str:
        """'9x6 chessboard', for messages."""
        ...

    def hint(self, gray: np.ndarray | None = None) -> str:
        """What to check when the target is not found (``gray``: an image it was not found in)."""
        ...

    def detect(self, gray: np.ndarray) -> Detection | None:
        """The target in an H x W uint8 image, or None."""
        ...

    def match(self, left: Detection, right: Detection) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(M x 3 board points, M x 2 left, M x 2 right) of the corners both cameras saw, or None."""
        ...

    def full_view(self, found: Detection) -> np.ndarray:
        """All N x 2 inner corners (found or inferred), row after row, for the coverage figures."""
        ...
