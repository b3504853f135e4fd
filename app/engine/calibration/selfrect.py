"""Self-rectification without a target, from feature matches pooled over several frames.

Matches pass the check's ratio test and RANSAC per frame. With known intrinsics (a rig whose
calibration drifted) a small bundle adjustment moves the relative rotation R and the
direction of t to minimise the Sampson distance to the epipolar lines of E = [t]x R, and
`cv2.stereoRectify` rectifies (the baseline length is kept, or the one given). Without them
the fundamental matrix of all inliers gives Hartley's projective rectification
(`cv2.stereoRectifyUncalibrated`), framed on the whole left view (or on the matched content where
that would shrink it to less than half); it is written as a rig
whose R1/R2 are those homographies in a nominal camera, so depths from it are relative, in
units of the baseline given (1 if none). Pixels are px; matches N x 2 float32 (x, y).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import cv2
import numpy as np

from app.engine.calibration.check import (
    MARGINAL_RMS_PX,
    MIN_MATCHES,
    epipolar_inliers,
    match_features,
    refine_matches,
)
from app.engine.calibration.fit import epipolar_rms
from app.engine.calibration.rig import Rectifier, StereoRig
from app.engine.errors import UserError

HUBER_PX = 1.0
FRAME_MARGIN = 0.05  # of the frame, around the left view (or matched content) of a projective rectification


@dataclass(frozen=True, eq=False)
class SelfRectification:
    """The rig found, the matches it came from and their vertical RMS before and after (px).

    ``method``: 'pose' (known intrinsics, R and t re-estimated), 'rows' (the right view's rows
    moved onto the left's) or 'projective'. "Before" is
    measured as the check measures the frames shown: with a known rig, on the frames that rig
    rectifies ('pose'); without one, on the raw frames ('projective').
    """

    rig: StereoRig
    matches: int
    frames: int
    before_rms_px: float
    after_rms_px: float
    method: str
    baseline_known: bool


def pooled_matches(
    pairs: Iterable[tuple[np.ndarray, np.ndarray]], detector: str = "orb", max_features: int = 3000
) -> tuple[np.ndarray, np.ndarray, tuple[int, int], int]:
    """Inlier matches of every H x W x 3 RGB pair: (N x 2 left, N x 2 right, (w, h), frames)."""
    lefts, rights = [np.zeros((0, 2), np.float32)], [np.zeros((0, 2), np.float32)]
    size: tuple[int, int] | None = None
    frames = 0
    for left, right in pairs:
        if left.shape != right.shape:
            raise UserError(f"left and right frames differ in size ({left.shape[:2]} vs {right.shape[:2]})")
        frame_size = (left.shape[1], left.shape[0])
        if size not in (None, frame_size):
            raise UserError("frames change size within the source; self-rectify one size at a time")
        size = frame_size
        gl, gr = (cv2.cvtColor(img, cv2.COLOR_RGB2GRAY) for img in (left, right))
        pl, pr = epipolar_inliers(*match_features(gl, gr, detector, max_features))
        lefts.append(pl)
        rights.append(pr)
        frames += 1
    if size is None:
        raise UserError("the source gave no frames; check the source")
    return np.concatenate(lefts), np.concatenate(rights), size, frames


def _skew(t: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -t[2], t[1]], [t[2], 0.0, -t[0]], [-t[1], t[0], 0.0]])


class _PoseModel:
    """Sampson residuals (px) of matches in a common ideal camera diag(f, f, 1), for the
    parameters (rotation vector 3, two moves of t orthogonal to its start t0)."""

    def __init__(self, pl: np.ndarray, pr: np.ndarray, t0: np.ndarray, focal: float) -> None:
        self.x1 = np.column_stack([pl / focal, np.ones(len(pl))])
        self.x2 = np.column_stack([pr / focal, np.ones(len(pr))])
        self.t0, self.focal = t0, focal
        helper = np.array([0.0, 1.0, 0.0]) if abs(t0[1]) < 0.9 else np.array([1.0, 0.0, 0.0])
        self.u = np.cross(t0, helper) / np.linalg.norm(np.cross(t0, helper))
        self.v = np.cross(t0, self.u)

    def pose(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = self.t0 + p[3] * self.u + p[4] * self.v
        return cv2.Rodrigues(p[:3])[0], t / np.linalg.norm(t)

    def residuals(self, p: np.ndarray) -> np.ndarray:
        r, t = self.pose(p)
        e = _skew(t) @ r
        ex1, etx2 = self.x1 @ e.T, self.x2 @ e
        num = np.sum(self.x2 * ex1, axis=1)
        den = ex1[:, 0] ** 2 + ex1[:, 1] ** 2 + etx2[:, 0] ** 2 + etx2[:, 1] ** 2
        return self.focal * num / np.sqrt(np.maximum(den, 1e-30))


def _huber_cost(r: np.ndarray) -> float:
    a = np.abs(r)
    return float(np.sum(np.where(a < HUBER_PX, 0.5 * a**2, HUBER_PX * (a - 0.5 * HUBER_PX))))


def _levenberg_marquardt(model: _PoseModel, p: np.ndarray, iterations: int = 40) -> np.ndarray:
    """Minimise the Huber cost of the model's residuals over p (numeric Jacobian)."""
    lam, current = 1e-3, _huber_cost(model.residuals(p))
    for _ in range(iterations):
        r = model.residuals(p)
        w = np.where(np.abs(r) < HUBER_PX, 1.0, HUBER_PX / np.maximum(np.abs(r), 1e-12))
        jac = np.empty((len(r), len(p)))
        for k in range(len(p)):
            step = np.zeros_like(p)
            step[k] = 1e-7
            jac[:, k] = (model.residuals(p + step) - r) / 1e-7
        a, g = jac.T @ (w[:, None] * jac), jac.T @ (w * r)
        improved = 0.0
        while lam < 1e8:
            trial = p - np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), g)
            new = _huber_cost(model.residuals(trial))
            if new < current:
                p, improved, current, lam = trial, current - new, new, lam * 0.3
                break
            lam *= 10.0
        if improved <= 1e-10 * max(current, 1e-12):
            break
    return p


def _pose(pl: np.ndarray, pr: np.ndarray, known: StereoRig, baseline_m: float | None) -> StereoRig:
    """The known rig with R and T re-estimated from N x 2 raw matches."""
    focal = float(known.K1[0, 0])
    ql = focal * cv2.undistortPoints(pl.reshape(-1, 1, 2), known.K1, known.D1).reshape(-1, 2)
    qr = focal * cv2.undistortPoints(pr.reshape(-1, 1, 2), known.K2, known.D2).reshape(-1, 2)
    k = np.diag([focal, focal, 1.0])
    e, mask = cv2.findEssentialMat(ql, qr, k, cv2.RANSAC, 0.999, 1.0)
    if e is None or e.shape != (3, 3):
        raise UserError("no relative pose fits the matches; use frames with more depth variation")
    _, r0, t0, _ = cv2.recoverPose(e, ql, qr, k, mask=mask)
    old = np.asarray(known.T, np.float64).ravel()
    t0 = t0.ravel() if float(t0.ravel() @ old) >= 0 else -t0.ravel()  # the rig's side, not its mirror
    model = _PoseModel(ql, qr, t0 / np.linalg.norm(t0), focal)
    p = _levenberg_marquardt(model, np.concatenate([cv2.Rodrigues(r0)[0].ravel(), [0.0, 0.0]]))
    r, t = model.pose(p)
    length = float(np.linalg.norm(old)) if baseline_m is None else baseline_m
    return StereoRig(known.image_size, known.K1, known.D1, known.K2, known.D2, r, t * length)


def _projective(pl: np.ndarray, pr: np.ndarray, size: tuple[int, int], baseline_m: float) -> StereoRig:
    """Hartley's rectification of N x 2 raw matches, as a rig in a nominal camera."""
    f, _ = cv2.findFundamentalMat(pl, pr, cv2.FM_8POINT)
    ok, h1, h2 = cv2.stereoRectifyUncalibrated(pl, pr, f, size) if f is not None else (False, None, None)
    if not ok or h1 is None or h2 is None:
        raise UserError("no rectification fits the matches; use frames with more depth variation")
    w, h = size
    centre = np.array([(w - 1) / 2, (h - 1) / 2, 1.0])
    # A homography and its negative move points alike, but only one of them is a camera
    # rotation with the scene in front (w > 0): cv2.stereoRectifyUncalibrated may give either
    h1, h2 = (m if float(m[2] @ centre) > 0 else -m for m in (h1, h2))
    # One similarity for both views keeps rows aligned: the whole left view fitted into the
    # frame, or the matched content where the whole view would shrink it to less than half
    # (a strongly projective rectification throws the corners far out)
    warped = [
        cv2.perspectiveTransform(p.reshape(-1, 1, 2).astype(np.float64), h) for p, h in ((pl, h1), (pr, h2))
    ]
    both = np.concatenate(warped).reshape(-1, 2)
    corners = np.array([[0, 0], [w - 1, 0], [0, h - 1], [w - 1, h - 1]], np.float64).reshape(-1, 1, 2)
    view = cv2.perspectiveTransform(corners, h1).reshape(-1, 2)
    frame_size = np.array([w, h], np.float64)
    boxes = [(b.min(axis=0), b.max(axis=0)) for b in (view, both)]
    margins = (0.0, FRAME_MARGIN)  # the view fills the frame; matched content keeps a margin
    scales = [
        float(np.min(frame_size * (1 - 2 * m) / np.maximum(hi - lo, 1e-9)))
        for (lo, hi), m in zip(boxes, margins, strict=True)
    ]
    pick = 0 if scales[0] >= 0.5 * scales[1] else 1
    (lo, hi), scale = boxes[pick], scales[pick]
    offset = np.array([w, h]) / 2 - scale * (lo + hi) / 2
    frame = np.array([[scale, 0, offset[0]], [0, scale, offset[1]], [0, 0, 1.0]])
    # keep the picture the right way round: an axis that the rectification reverses at the
    # centre (x: the disparities turn negative; y: upside down) is turned back, in both views
    sx, sy = np.sign(np.diag(_jacobian(frame @ h1, centre[:2])))
    if sx < 0 or sy < 0:
        flip = np.array([[sx, 0, (w - 1) * (sx < 0)], [0, sy, (h - 1) * (sy < 0)], [0, 0, 1.0]])
        frame = flip @ frame
    h1, h2 = frame @ h1, _disparity_offset(pl, pr, frame @ h1, frame @ h2)
    return _nominal_rig(size, h1, h2, baseline_m)


ROWS_RMS_PX = 0.5  # a row-only correction that leaves the matches this close is taken as it is


def _rows(pl: np.ndarray, pr: np.ndarray, size: tuple[int, int], baseline_m: float) -> StereoRig:
    """The right view's rows moved onto the left's (y' = a + b x + c y: a shift, a roll, a vertical
    scale), the left view and every column as they are: disparities keep their values. Hartley's
    projective pair, for a pair only 3 px apart vertically, sheared the views: a flat wall at
    20 px read 24.6 px on its left half and 20.0 on its right."""
    x, y = pr[:, 0].astype(np.float64), pr[:, 1].astype(np.float64)
    a = np.column_stack([np.ones(len(pr)), x, y])
    (c0, cx, cy), *_ = np.linalg.lstsq(a, pl[:, 1].astype(np.float64), rcond=None)
    h2 = np.array([[1.0, 0.0, 0.0], [cx, cy, c0], [0.0, 0.0, 1.0]])
    return _nominal_rig(size, np.eye(3), h2, baseline_m)


def _nominal_rig(size: tuple[int, int], h1: np.ndarray, h2: np.ndarray, baseline_m: float) -> StereoRig:
    """Pixel homographies as a rig of a nominal camera (focal length the image's larger side)."""
    w, h = size
    nominal = max(w, h)
    k = np.array([[nominal, 0, (w - 1) / 2], [0, nominal, (h - 1) / 2], [0, 0, 1.0]])
    k_inv = np.linalg.inv(k)
    p1 = np.hstack([k, np.zeros((3, 1))])
    p2 = p1.copy()
    p2[0, 3] = -nominal * baseline_m
    zeros = np.zeros((1, 5))
    return StereoRig(
        size, k, zeros, k, zeros, np.eye(3), np.array([-baseline_m, 0.0, 0.0]),
        k_inv @ h1 @ k, k_inv @ h2 @ k, p1, p2,
    )  # fmt: skip


def _jacobian(m: np.ndarray, point: np.ndarray) -> np.ndarray:
    """The 2 x 2 derivative of the homography ``m`` at the pixel ``point`` (x, y)."""
    x = np.array([point[0], point[1], 1.0])
    u, w = m[:2] @ x, float(m[2] @ x)
    return (m[:2, :2] * w - np.outer(u, m[2, :2])) / (w * w)


def _disparity_offset(pl: np.ndarray, pr: np.ndarray, h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
    """``h2`` moved along the rows so that the matches' disparities suit a 0..max search.

    Hartley's matching transform minimises the matches' horizontal disparity, which centres
    them on zero: half a scene would read negative (behind the rig), and a flat scene all zero.
    The matches' median horizontal offset before rectification comes back where that leaves
    at least 98 % of them at a disparity >= 0 (a rig nearly rectified already keeps its
    disparities); otherwise the smallest 2 % move to zero."""
    wl, wr = (
        cv2.perspectiveTransform(p.reshape(-1, 1, 2).astype(np.float64), m).reshape(-1, 2)
        for p, m in ((pl, h1), (pr, h2))
    )
    rectified = wl[:, 0] - wr[:, 0]
    offset = float(np.median(pl[:, 0].astype(np.float64) - pr[:, 0]) - np.median(rectified))
    if np.mean(rectified + offset >= 0) < 0.98:
        offset = -float(np.percentile(rectified, 2))
    move = np.array([[1.0, 0, -offset], [0, 1.0, 0], [0, 0, 1.0]])  # right view left by offset px
    return move @ h2


def self_rectify(
    pl: np.ndarray,
    pr: np.ndarray,
    image_size: tuple[int, int],
    known: StereoRig | None = None,
    baseline_m: float | None = None,
    frames: int = 1,
) -> SelfRectification:
    """A rectified rig from N x 2 raw matches (left, right) of frames of ``image_size``.

    ``known``: a rig whose intrinsics and distortion are kept (pose re-estimated, baseline
    length kept unless ``baseline_m`` is given); without it the rectification is projective.
    """
    if len(pl) < MIN_MATCHES:
        raise UserError(
            f"only {len(pl)} consistent matches over the frames (need {MIN_MATCHES}); the views do not "
            "overlap or the scene lacks texture"
        )
    if known is not None and known.image_size != image_size:
        (kw, kh), (w, h) = known.image_size, image_size
        raise UserError(f"the calibration is for {kw}x{kh} but frames are {w}x{h}; use matching frames")
    if known is not None:
        rig, method = _pose(pl, pr, known, baseline_m).with_rectification(), "pose"
        try:
            rig.rectified()
        except UserError:  # a pose with no stereo baseline left (worded for a file, it said 'check the file')
            raise UserError(
                "no relative pose fits the matches (a repetitive pattern such as a chessboard misleads the "
                "matcher); use frames of a static scene with varied texture that both cameras see"
            ) from None
    else:
        baseline = 1.0 if baseline_m is None else baseline_m
        rig, method = _rows(pl, pr, image_size, baseline), "rows"
        if epipolar_rms(rig, [pl.astype(np.float32)], [pr.astype(np.float32)]) > ROWS_RMS_PX:
            rig, method = _projective(pl, pr, image_size, baseline), "projective"
    ql, qr = pl.astype(np.float32), pr.astype(np.float32)
    if known is not None:  # the rig in use rectifies the frames: its rows are what "before" means
        before = epipolar_rms(known, [ql], [qr])
    else:
        before = float(np.sqrt(np.mean((pl[:, 1] - pr[:, 1]).astype(np.float64) ** 2)))
    after = epipolar_rms(rig, [ql], [qr])
    known_baseline = baseline_m is not None or known is not None
    return SelfRectification(rig, len(pl), frames, before, after, method, known_baseline)


def to_raw(rig: StereoRig, points: np.ndarray, side: int) -> np.ndarray:
    """N x 2 rectified pixels of camera ``side`` (0 left, 1 right) back to raw pixels."""
    rig = rig.with_rectification()
    k, d, r, p = (rig.K1, rig.D1, rig.R1, rig.P1) if side == 0 else (rig.K2, rig.D2, rig.R2, rig.P2)
    assert r is not None and p is not None
    rays = np.column_stack([points.astype(np.float64), np.ones(len(points))]) @ np.linalg.inv(p[:, :3] @ r).T
    raw, _ = cv2.projectPoints(rays.reshape(-1, 1, 3), np.zeros(3), np.zeros(3), k, d)
    return raw.reshape(-1, 2).astype(np.float32)


def rematch(
    rig: StereoRig, pairs: list[tuple[np.ndarray, np.ndarray]], detector: str = "orb"
) -> tuple[np.ndarray, np.ndarray]:
    """Matches found again on the frames rectified by ``rig``, where the views look alike and
    correlation refines them to a tenth of a pixel, in raw pixels: two N x 2 arrays."""
    rectifier = Rectifier(rig)
    lefts, rights = [np.zeros((0, 2), np.float32)], [np.zeros((0, 2), np.float32)]
    for left, right in pairs:
        rl, rr = rectifier.rectify(left, right)
        gl, gr = (cv2.cvtColor(img, cv2.COLOR_RGB2GRAY) for img in (rl, rr))
        pl, pr = refine_matches(gl, gr, *epipolar_inliers(*match_features(gl, gr, detector)))
        lefts.append(to_raw(rig, pl, 0))
        rights.append(to_raw(rig, pr, 1))
    return np.concatenate(lefts), np.concatenate(rights)


def rectify_frames(
    pairs: Iterable[tuple[np.ndarray, np.ndarray]],
    known: StereoRig | None = None,
    baseline_m: float | None = None,
    detector: str = "orb",
) -> SelfRectification:
    """`self_rectify` from H x W x 3 RGB raw frame pairs, in two passes.

    The first pass fits keypoint matches (good to about half a pixel); the second matches
    again on the frames the first rectified, refines by correlation, maps back and fits
    those; both figures are of those matches, in raw and in rectified pixels.
    """
    frames = list(pairs)
    pl, pr, size, count = pooled_matches(frames, detector)
    first = self_rectify(pl, pr, size, known, baseline_m, count)
    ql, qr = rematch(first.rig, frames, detector)
    found = (
        first
        if len(ql) < max(MIN_MATCHES, len(pl) // 2)
        else self_rectify(ql, qr, size, known, baseline_m, count)
    )
    if not found.after_rms_px <= MARGINAL_RMS_PX:  # a rig that leaves its own matches rows apart
        before = "with the rig given" if known is not None else "before"
        raise UserError(
            f"the self-rectification failed: its matches still lie {found.after_rms_px:.2f} px apart "
            f"vertically ({found.before_rms_px:.2f} px {before}), above the {MARGINAL_RMS_PX:g} px a usable "
            "one leaves; use frames of a static scene with varied texture that both cameras see (the "
            "repeated squares of a chessboard mislead the matcher: calibrate with the board instead)"
        )
    return found
