"""Range checks of calibration values, and fitting a calibration to the frames' size.

Sign convention: the baseline is the distance from the left to the right camera, positive
when the right camera is to the right of the left one (as Middlebury writes it, and as
OpenCV's rectified P2[0,3] = -f * B implies). A negative one means the cameras, or the
images, are swapped; it is refused with that said, since flipping it silently would give
depth for a mirrored scene.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from app.engine.calibration.rig import StereoRig, q_from_projections
from app.engine.errors import UserError
from app.engine.types import Calibration

ASPECT_TOLERANCE = 0.01  # relative: a calibration this close in aspect ratio is rescaled


def check_values(
    calibration: Calibration, where: str, focal: str, baseline: str, unit: str = "m"
) -> Calibration:
    """Refuse non-finite numbers, focal length <= 0 and a zero or negative baseline.

    ``where`` names the file; ``focal``/``baseline`` name the fields as the file spells them,
    ``unit`` the baseline's unit there ('mm' for Middlebury).
    """
    scale = 1000.0 if unit == "mm" else 1.0
    values = {
        focal: calibration.focal_px,
        baseline: calibration.baseline_m * scale,
        "cx": calibration.cx,
        "cy": calibration.cy,
        "doffs": calibration.doffs,
    }
    for name, value in values.items():
        if not math.isfinite(value):
            raise UserError(f"{where}: field {name!r} is {value}; write a finite number")
    if calibration.focal_px <= 0:
        raise UserError(
            f"{where}: focal length {focal!r} is {calibration.focal_px:g}; "
            "it must be a positive number of pixels"
        )
    b = calibration.baseline_m * scale
    if b == 0:
        raise UserError(
            f"{where}: baseline {baseline!r} is 0; write the distance between the cameras ({unit})"
        )
    if b < 0:
        raise UserError(
            f"{where}: baseline {baseline!r} is {b:g} {unit}: the right camera would be left of the left "
            f"one; write {-b:g} if only the sign is wrong, or swap the left and right images"
        )
    return calibration


def fit_to_frames(
    calibration: Calibration,
    rig: StereoRig | None,
    calib_size: tuple[int, int] | None,
    frame_size: tuple[int, int],
    where: str,
) -> tuple[Calibration, StereoRig | None, str | None]:
    """The calibration for frames of ``frame_size`` (w, h): as it is when the sizes agree (or
    the file gives none), rescaled when only the scale differs, with a note; else refused."""
    if calib_size is None:
        return calibration, rig, _off_centre_note(calibration, rig, frame_size, where)
    if tuple(calib_size) == tuple(frame_size):
        return calibration, rig, None
    (cw, ch), (fw, fh) = calib_size, frame_size
    s, sy = fw / cw, fh / ch
    if abs(sy - s) > ASPECT_TOLERANCE * s:
        raise UserError(
            f"{where} is for {cw}x{ch} images but the frames are {fw}x{fh} (another aspect ratio); "
            "use the calibrated frames, or calibrate at this size"
        )
    a = np.array([[s, 0, 0.5 * s - 0.5], [0, s, 0.5 * s - 0.5], [0, 0, 1.0]])  # pixel centres scale
    scaled = replace(
        calibration,
        focal_px=calibration.focal_px * s,
        cx=(calibration.cx + 0.5) * s - 0.5,
        cy=(calibration.cy + 0.5) * s - 0.5,
        doffs=calibration.doffs * s,
    )
    note = f"{where} is for {cw}x{ch}; scaled its intrinsics by {s:.4g} to the {fw}x{fh} frames"
    if rig is None:
        return scaled, None, note
    r = rig.with_rectification()
    assert r.P1 is not None and r.P2 is not None
    p1, p2 = a @ r.P1, a @ r.P2
    moved = StereoRig(
        (fw, fh), a @ r.K1, r.D1, a @ r.K2, r.D2, r.R, r.T, r.R1, r.R2, p1, p2, q_from_projections(p1, p2)
    )
    return replace(moved.rectified(), baseline_known=calibration.baseline_known), moved, note


OFF_CENTRE = 0.15  # share of the frame's width (height) a principal point may lie off its centre
OFF_CENTRE_WORDS = "metric depth from it is likely wrong"  # how the off-centre note is found again


def _off_centre_note(
    calibration: Calibration, rig: StereoRig | None, frame_size: tuple[int, int], where: str
) -> str | None:
    """A file that does not say its image size (OpenCV's stereo_calib sample writes none) is taken
    as made for the frames; a note when its principal point lies far (``OFF_CENTRE``) from their
    centre: it was likely made at another size (the sample's 640x480 file on 1280x960 frames
    read every depth 0.57 x too near, without a word)."""
    k = rig.K1 if rig is not None else None
    cx, cy = (float(k[0, 2]), float(k[1, 2])) if k is not None else (calibration.cx, calibration.cy)
    fw, fh = frame_size
    if cx <= 0 or cy <= 0:  # no principal point given
        return None
    if abs(cx - (fw - 1) / 2) <= OFF_CENTRE * fw and abs(cy - (fh - 1) / 2) <= OFF_CENTRE * fh:
        return None
    return (
        f"{where} does not say its image size, and its principal point ({cx:.0f}, {cy:.0f}) lies far "
        f"from the centre of these {fw}x{fh} frames: it looks made for about {2 * cx + 1:.0f}x"
        f"{2 * cy + 1:.0f} images, and {OFF_CENTRE_WORDS}; give the frames it was "
        "made for, or calibrate at this size"
    )


def check_rig(rig: StereoRig, where: str) -> StereoRig:
    """Refuse a raw rig whose camera matrices have no positive focal lengths, or a zero T."""
    for name, k in (("M1", rig.K1), ("M2", rig.K2)):
        if k[0, 0] <= 0 or k[1, 1] <= 0:
            raise UserError(
                f"{where}: field {name!r} has focal lengths {k[0, 0]:g}, {k[1, 1]:g}; "
                "they must be positive pixels"
            )
    if not np.any(rig.T):
        raise UserError(f"{where}: field 'T' is 0 (no baseline); write the right camera's offset in metres")
    return rig
