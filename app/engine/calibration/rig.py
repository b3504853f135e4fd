"""Raw stereo rigs and rectification: `StereoRig` (both cameras' intrinsics, distortion and
the pose of the right camera), the rectified `Calibration` it implies, and `Rectifier`, whose
maps are built once per image size. Files are read and written by ``app.engine.calibration.files``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np

from app.engine.errors import UserError
from app.engine.types import Calibration

FIELD_SHAPES: dict[str, tuple[int, ...]] = {
    "K1": (3, 3),
    "K2": (3, 3),
    "R": (3, 3),
    "T": (3,),
    "R1": (3, 3),
    "R2": (3, 3),
    "P1": (3, 4),
    "P2": (3, 4),
    "Q": (4, 4),
}


@dataclass(frozen=True, eq=False)
class StereoRig:
    """A raw (unrectified) stereo rig, all matrices float64.

    ``K1``/``K2`` 3 x 3 camera matrices, ``D1``/``D2`` 1 x N distortion (OpenCV order),
    ``R`` 3 x 3 and ``T`` (3,) take left-camera points to the right camera (``T`` in metres),
    ``image_size`` is (width, height). ``R1 R2`` (3 x 3), ``P1 P2`` (3 x 4) and ``Q`` (4 x 4)
    are `cv2.stereoRectify`'s outputs; `with_rectification` fills them when absent.
    """

    image_size: tuple[int, int]
    K1: np.ndarray
    D1: np.ndarray
    K2: np.ndarray
    D2: np.ndarray
    R: np.ndarray
    T: np.ndarray
    R1: np.ndarray | None = None
    R2: np.ndarray | None = None
    P1: np.ndarray | None = None
    P2: np.ndarray | None = None
    Q: np.ndarray | None = None

    def __post_init__(self) -> None:
        w, h = (int(v) for v in self.image_size)
        if w <= 0 or h <= 0:
            raise UserError(f"calibration image size must be positive, got {w}x{h}; check the file")
        object.__setattr__(self, "image_size", (w, h))
        for name in ("K1", "D1", "K2", "D2", "R", "T", "R1", "R2", "P1", "P2", "Q"):
            value = getattr(self, name)
            if value is None:
                continue
            a = np.asarray(value, dtype=np.float64)
            shape = FIELD_SHAPES.get(name, (1, a.size))  # distortion: any length, kept as 1 x N
            if a.size != int(np.prod(shape)) or not np.all(np.isfinite(a)):
                raise UserError(f"calibration field {name} must be {shape_text(shape)} finite numbers")
            object.__setattr__(self, name, a.reshape(shape))

    def with_rectification(self) -> StereoRig:
        """This rig with R1 R2 P1 P2 Q set: the file's, else `cv2.stereoRectify` (alpha=0)."""
        if self.R1 is not None and self.R2 is not None and self.P1 is not None and self.P2 is not None:
            return self if self.Q is not None else replace(self, Q=q_from_projections(self.P1, self.P2))
        try:
            r1, r2, p1, p2, q, _, _ = cv2.stereoRectify(
                self.K1, self.D1, self.K2, self.D2, self.image_size, self.R, self.T.reshape(3, 1),
                flags=cv2.CALIB_ZERO_DISPARITY, alpha=0,
            )  # fmt: skip
        except cv2.error as exc:  # degenerate matrices: say so in one line, not a C++ traceback
            why = str(exc).strip().splitlines()[-1]
            raise UserError(f"cannot rectify with this calibration ({why}); check M1 M2 R T") from None
        return replace(self, R1=r1, R2=r2, P1=p1, P2=p2, Q=q)

    def rectified(self) -> Calibration:
        """The geometry of the rectified pair: f = P1[0,0], B = -P2[0,3] / P2[0,0]."""
        rig = self.with_rectification()
        assert rig.P1 is not None and rig.P2 is not None  # set by with_rectification
        return calibration_from_projections(rig.P1, rig.P2)


def calibration_from_projections(p1: np.ndarray, p2: np.ndarray) -> Calibration:
    """`Calibration` from the rectified 3 x 4 projection matrices of the left and right camera."""
    if p1[0, 0] <= 0 or p2[0, 0] <= 0:
        raise UserError("calibration P1[0,0] and P2[0,0] (focal length) must be positive; check the file")
    if p2[0, 3] == 0:
        raise UserError("calibration P2[0,3] is 0 (no baseline); is P2 the right camera's projection?")
    return Calibration(
        focal_px=float(p1[0, 0]),
        baseline_m=float(-p2[0, 3] / p2[0, 0]),
        cx=float(p1[0, 2]),
        cy=float(p1[1, 2]),
        doffs=float(p2[0, 2] - p1[0, 2]),
    )


def q_from_projections(p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """The 4 x 4 disparity-to-depth matrix `cv2.stereoRectify` would give for P1, P2."""
    tx = p2[0, 3] / p2[0, 0]  # rectified x translation of the right camera (negative)
    return np.array(
        [
            [1.0, 0.0, 0.0, -p1[0, 2]],
            [0.0, 1.0, 0.0, -p1[1, 2]],
            [0.0, 0.0, 0.0, p1[0, 0]],
            [0.0, 0.0, -1.0 / tx, (p1[0, 2] - p2[0, 2]) / tx],
        ]
    )


class Rectifier:
    """Undistorts and rectifies frames of one rig; maps are built on first use, then reused."""

    def __init__(self, rig: StereoRig) -> None:
        self.rig = rig.with_rectification()
        self.calibration = self.rig.rectified()
        self._maps: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None

    @property
    def image_size(self) -> tuple[int, int]:
        """(w, h) of the frames this rig rectifies."""
        return self.rig.image_size

    def map_points(self, points: np.ndarray, right: bool = False) -> np.ndarray:
        """N x 2 pixel positions in a raw left (``right``: right) frame -> where they land in the
        rectified frame (e.g. board corners found on the raw frame, drawn on the rectified view)."""
        r = self.rig
        k, d, rot, proj = (r.K2, r.D2, r.R2, r.P2) if right else (r.K1, r.D1, r.R1, r.P1)
        pts = np.asarray(points, np.float64).reshape(-1, 1, 2)
        if not len(pts):
            return np.zeros((0, 2))
        return cv2.undistortPoints(pts, k, d, R=rot, P=proj).reshape(-1, 2)

    def rectify(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw H x W x 3 uint8 RGB frames -> rectified frames of the same size."""
        w, h = self.rig.image_size
        for img in (left, right):
            if img.shape[:2] != (h, w):
                raise UserError(
                    f"calibration is for {w}x{h} but frames are {img.shape[1]}x{img.shape[0]}; "
                    "use frames of the calibrated size or recalibrate"
                )
        if self._maps is None:
            r = self.rig
            assert r.R1 is not None and r.R2 is not None and r.P1 is not None and r.P2 is not None
            # Fixed-point maps remap about twice as fast as float ones; their 1/32 px steps
            # are far below what a depth network or the epipolar check can resolve.
            self._maps = (
                cv2.initUndistortRectifyMap(r.K1, r.D1, r.R1, r.P1, (w, h), cv2.CV_16SC2),
                cv2.initUndistortRectifyMap(r.K2, r.D2, r.R2, r.P2, (w, h), cv2.CV_16SC2),
            )
        (l1, l2), (r1, r2) = self._maps
        return (
            cv2.remap(left, l1, l2, cv2.INTER_LINEAR),
            cv2.remap(right, r1, r2, cv2.INTER_LINEAR),
        )


def shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(s) for s in shape) if len(shape) > 1 else f"{shape[0]}"
