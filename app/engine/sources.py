"""Where stereo pairs come from. For now: evaluation scenes with ground truth.

Layouts: Middlebury 2014 / ETH3D (a folder with ``im0.png``, ``im1.png``, optional
``disp0GT.pfm`` and ``calib.txt``, or a folder of such folders), KITTI 2015
(``image_2/``, ``image_3/``, ``disp_occ_0/``), or an explicit pair.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.engine.calibration import MiddleburyCalib, read_middlebury_calib
from app.engine.errors import UserError
from app.engine.formats import read_image_rgb, read_kitti_png, read_pfm
from app.engine.types import StereoPair


@dataclass(frozen=True)
class Scene:
    """One evaluation scene; files are read on ``load``."""

    name: str
    left: Path
    right: Path
    gt: Path | None = None
    calib: Path | None = None

    def load(self) -> tuple[StereoPair, MiddleburyCalib | None]:
        left, right = read_image_rgb(self.left), read_image_rgb(self.right)
        meta = read_middlebury_calib(self.calib) if self.calib else None
        gt = read_disparity(self.gt) if self.gt else None
        if gt is not None and gt.shape != left.shape[:2]:
            raise UserError(
                f"ground truth {self.gt} is {gt.shape[1]}x{gt.shape[0]}, images are "
                f"{left.shape[1]}x{left.shape[0]}; they must match"
            )
        cal = meta.calibration if meta else None
        return StereoPair(left, right, 0.0, cal, gt), meta


def read_disparity(path: Path) -> np.ndarray:
    """Ground-truth disparity from PFM or KITTI PNG; unknown pixels become NaN."""
    if path.suffix.lower() == ".pfm":
        disp = read_pfm(path)
        disp = disp[..., 0] if disp.ndim == 3 else disp
        return np.where(np.isfinite(disp) & (disp > 0), disp, np.nan).astype(np.float32)
    return read_kitti_png(path)


def _middlebury(folder: Path) -> Scene | None:
    left, right = folder / "im0.png", folder / "im1.png"
    if not (left.is_file() and right.is_file()):
        return None
    gt = folder / "disp0GT.pfm"
    calib = folder / "calib.txt"
    return Scene(folder.name, left, right, gt if gt.is_file() else None, calib if calib.is_file() else None)


def _kitti(folder: Path) -> Iterator[Scene]:
    gt_dir = folder / "disp_occ_0"
    for left in sorted((folder / "image_2").glob("*_10.png")):
        right = folder / "image_3" / left.name
        if right.is_file():
            gt = gt_dir / left.name
            yield Scene(left.stem, left, right, gt if gt.is_file() else None)


def find_scenes(path: str | Path) -> list[Scene]:
    """Scenes under ``path`` in any supported layout; a ``UserError`` if none."""
    root = Path(path)
    if not root.is_dir():
        raise UserError(f"scene folder not found: {root}; give a Middlebury or KITTI folder")
    single = _middlebury(root)
    if single is not None:
        return [single]
    if (root / "image_2").is_dir():
        scenes = list(_kitti(root))
    else:
        found = (_middlebury(sub) for sub in sorted(root.iterdir()) if sub.is_dir())
        scenes = [s for s in found if s is not None]
    if not scenes:
        raise UserError(
            f"no stereo scenes in {root}: expected im0.png/im1.png (Middlebury) or image_2/image_3 (KITTI)"
        )
    return scenes
