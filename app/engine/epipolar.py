"""Feature matches between the two views of a stereo pair, and the vertical offset they show.

The calibration check (``calibration.check``), self-rectification (``calibration.selfrect``) and
the vertical alignment before depth (``depth.alignment``) share these: ratio-tested, mutual ORB
or SIFT matches; the ones consistent with one RANSAC fundamental matrix; their sub-pixel
refinement by correlation; and the vertical offset y_left - y_right as a plane over the image.
Images are H x W uint8 grey; point arrays are N x 2 float32 (x, y).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from app.engine.errors import UserError
from app.engine.validation import Bounds, integer

DETECTORS = ("orb", "sift")
RATIO = 0.8  # Lowe's ratio test: best match clearly better than the second best
RANSAC_PX = 1.5  # distance to the epipolar line that counts as an inlier of F
PLANAR_FRACTION = 0.6  # F inliers one homography explains, above which the scene counts as flat
SWAP_PX, SWAP_SHARE = 1.0, 0.6  # matches this far on the wrong side, more than this share of them
SWAP_ROWS_PX = 8.0  # beyond this vertical RMS the side of the matches says nothing of the order
_HALF = 7  # refinement patch is 15 x 15 px
_SEARCH = 3  # px around the descriptor match
_MIN_NCC = 0.9

MIN_FEATURES, MAX_FEATURES = 50, 100_000  # per image: fewer cannot fit a geometry; more only cost time


@dataclass(frozen=True)
class Misalignment:
    """The vertical offset dy = y_left - y_right as a plane over the image, fitted to the matches.

    ``shift_px``: dy at the image centre (a pitch or a vertical offset of one camera);
    ``roll_deg``: rotation of the right image against the left about the optical axis, positive
    when the right image is turned anticlockwise as displayed (dy growing along x);
    ``scale_percent``: vertical scale of the right image against the left (dy growing along
    y: unequal focal lengths, or a tilt).
    """

    shift_px: float
    roll_deg: float
    scale_percent: float

    @classmethod
    def fit(cls, pl: np.ndarray, pr: np.ndarray, image_size: tuple[int, int]) -> Misalignment:
        w, h = image_size
        dy = (pl[:, 1] - pr[:, 1]).astype(np.float64)
        # Either camera may have turned: the offsets are read against the matches' midpoints.
        # Against the left points alone, a right camera knocked 1 deg read 0.86 deg on a slanted
        # board of OpenCV's sample (its disparity grows along x) and a left one 0.99.
        a = _plane_columns((pl + pr).astype(np.float64) / 2, (h, w))
        (shift, along_x, along_y), *_ = np.linalg.lstsq(a, dy, rcond=None)
        return cls(float(shift), float(np.degrees(np.arctan(along_x))), float(-100.0 * along_y))

    def __str__(self) -> str:
        # rounded first: "scale -0.00 %" read as a measured loss (review)
        shift, roll, scale = (
            round(v, n) + 0.0 for v, n in ((self.shift_px, 2), (self.roll_deg, 3), (self.scale_percent, 2))
        )
        return f"shift {shift:+.2f} px at the centre, roll {roll:+.3f} deg, scale {scale:+.2f} %"


def match_features(
    gl: np.ndarray, gr: np.ndarray, detector: str = "orb", max_features: int = 3000
) -> tuple[np.ndarray, np.ndarray]:
    """Ratio-tested matches between two H x W uint8 images: two N x 2 float32 arrays."""
    integer(max_features, "features per image", Bounds(MIN_FEATURES, MAX_FEATURES))
    features: cv2.Feature2D
    if detector == "sift":
        if not hasattr(cv2, "SIFT"):
            raise UserError("SIFT is not available in this OpenCV build; use --detector orb")
        features, norm = cv2.SIFT.create(max_features), cv2.NORM_L2
    elif detector == "orb":
        features, norm = cv2.ORB.create(max_features), cv2.NORM_HAMMING
    else:
        raise UserError(f"unknown detector {detector!r}; use one of: {', '.join(DETECTORS)}")
    kl, dl = features.detectAndCompute(gl, None)
    kr, dr = features.detectAndCompute(gr, None)
    empty = np.zeros((0, 2), np.float32)
    if dl is None or dr is None or len(kl) < 2 or len(kr) < 2:
        return empty, empty
    matcher = cv2.BFMatcher(norm)
    pairs = matcher.knnMatch(dl, dr, k=2)
    back = {m.queryIdx: m.trainIdx for m in matcher.match(dr, dl)}  # each right point's best left
    # Ratio test, and mutual: the right point's best match is this left point, too.
    unique = [
        p[0]
        for p in pairs
        if len(p) == 2 and p[0].distance < RATIO * p[1].distance and back.get(p[0].trainIdx) == p[0].queryIdx
    ]
    pl = np.array([kl[m.queryIdx].pt for m in unique], np.float32).reshape(-1, 2)
    pr = np.array([kr[m.trainIdx].pt for m in unique], np.float32).reshape(-1, 2)
    return pl, pr


def epipolar_inliers(pl: np.ndarray, pr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The N x 2 matches consistent with one RANSAC fundamental matrix (none below 8)."""
    if len(pl) < 8:
        return pl[:0], pr[:0]
    _, mask = cv2.findFundamentalMat(pl, pr, cv2.FM_RANSAC, RANSAC_PX, 0.999, 5000)
    keep = mask.ravel().astype(bool) if mask is not None and len(mask) == len(pl) else np.zeros(len(pl), bool)
    pl, pr = pl[keep], pr[keep]
    if len(pl) >= 8:
        # A flat scene (a wall, a board) leaves F undetermined: one homography then explains
        # most inliers, and the matches it does not explain are the wrong ones that fit
        # some F of the family.
        _, hmask = cv2.findHomography(pl, pr, cv2.RANSAC, RANSAC_PX)
        if hmask is not None and hmask.mean() >= PLANAR_FRACTION:
            flat = hmask.ravel().astype(bool)
            pl, pr = pl[flat], pr[flat]
    return pl, pr


def _plane_columns(points: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    h, w = size
    return np.column_stack([np.ones(len(points)), points[:, 0] - (w - 1) / 2, points[:, 1] - (h - 1) / 2])


def robust_plane(points: np.ndarray, dy: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, float]:
    """Plane coefficients (shift, along x, along y about the centre) fitted to the vertical
    offsets ``dy`` at N x 2 ``points`` of an image of ``size`` (H, W) by iteratively reweighted
    least squares (Huber, 1 robust sigma), and that sigma (1.4826 MAD of the residuals)."""
    a = _plane_columns(points, size)
    weights = np.ones(len(points))
    coef: np.ndarray = np.zeros(3)
    sigma = 0.0
    for _ in range(6):
        coef, *_ = np.linalg.lstsq(a * weights[:, None], dy * weights, rcond=None)
        residual = dy - a @ coef
        sigma = float(1.4826 * np.median(np.abs(residual)))
        weights = np.sqrt(np.minimum(1.0, (sigma + 1e-3) / np.maximum(np.abs(residual), 1e-9)))
    return coef, sigma


MISMATCH_PX = 3.0  # off the rows' plane by more than this (and 4 robust sigmas): a wrong match
NEAR_PLANE_PX = 2.0  # the same where most matches support one plane (``consensus_plane``)
MIN_AGREEING = 20  # matches within MISMATCH_PX of the plane needed to say anything of the rows
CONSENSUS_PX = 0.75  # matches this near a candidate plane support it (refined ones sit ~0.3 px off)
CONSENSUS_TRIALS = 300  # candidate planes, each through 3 matches drawn with a fixed seed
CONSENSUS_SHARE = 0.5  # a plane this share of the matches supports is the rows' (else all are fitted)


def consensus_plane(points: np.ndarray, dy: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """A boolean mask of the N matches within ``CONSENSUS_PX`` of the plane of vertical offsets
    that most of them support: planes through 3 matches drawn with a fixed seed (the same
    answer every run), the best one's support returned.

    A least-squares start, robust or not, leans towards a tight cluster of wrong matches: on a
    tilted chessboard the matches two squares away carry a steady 3-4 px offset, and on OpenCV's
    stereo sample such a cluster (a fifth of the matches) tilted the fit by 0.6 deg and made a
    pair rectified to 0.17 px read 1.7 px, 'not rectified'."""
    a = _plane_columns(points, size)
    rng = np.random.default_rng(0)
    picks = np.stack([rng.choice(len(points), 3, replace=False) for _ in range(CONSENSUS_TRIALS)])
    systems = a[picks]
    solvable = np.abs(np.linalg.det(systems)) > 1e-6
    if not solvable.any():
        return np.ones(len(points), bool)
    planes = np.linalg.solve(systems[solvable], dy[picks[solvable]][..., None])[..., 0]  # T x 3
    support = np.abs(a @ planes.T - dy[:, None]) <= CONSENSUS_PX  # N x T
    best: np.ndarray = support[:, int(np.argmax(support.sum(axis=0)))]
    return best


def row_consistent(pl: np.ndarray, pr: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, bool]:
    """A boolean mask of the N matches whose vertical offset lies near the plane most of them
    follow, and whether enough of them agree (``MIN_AGREEING`` within ``MISMATCH_PX``) for the
    rows to be judged at all.

    A repetitive pattern (a chessboard's squares, a keyboard's keys, tiles) gives matches one
    period away that still fit some fundamental matrix; a few of them, tens of px off, made a
    rectified pair's vertical RMS read 20+ px. A misaligned rig moves its rows as a plane (shift,
    roll, scale): the plane most matches support (``consensus_plane``), refitted robustly to its
    support, is followed, and only the matches off it are left out. A pair far from rectified
    (two photographs from different places) has rows that no plane follows: when no plane holds
    ``CONSENSUS_SHARE`` of the matches, the robust fit of all of them is. Whether the rows can be
    judged at all is asked of that fit: on a board filling the view, matches a row of squares
    away can outnumber the true ones, and one plane then holds the wrong ones."""
    if len(pl) < 8:
        return np.ones(len(pl), bool), False
    points = pl.astype(np.float64)
    dy = (pl[:, 1] - pr[:, 1]).astype(np.float64)
    columns = _plane_columns(points, size)
    coef, sigma = robust_plane(points, dy, size)
    residual = np.abs(dy - columns @ coef)
    agree = int((residual <= MISMATCH_PX).sum()) >= MIN_AGREEING
    support = consensus_plane(points, dy, size) if agree else None
    if support is None or support.mean() < CONSENSUS_SHARE:
        keep: np.ndarray = residual <= max(MISMATCH_PX, 4.0 * sigma)
        return keep, agree
    coef, sigma = robust_plane(points[support], dy[support], size)
    residual = np.abs(dy - columns @ coef)
    keep = residual <= max(NEAR_PLANE_PX, 4.0 * sigma)
    return keep, int(keep.sum()) >= MIN_AGREEING


def matches_swapped(pl: np.ndarray, pr: np.ndarray) -> bool:
    """Most of N x 2 matches (left, right) on the wrong side, at negative disparity: the images,
    or the cameras, are the wrong way round."""
    return bool(np.mean(pl[:, 0] - pr[:, 0] < -SWAP_PX) > SWAP_SHARE)


def refine_matches(
    gl: np.ndarray, gr: np.ndarray, pl: np.ndarray, pr: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Move each right point to the sub-pixel best match of the patch around its left point.

    Keypoint positions are quantised to the detector's pyramid grid (up to a pixel), which is
    the size of the offsets we look for; normalised cross-correlation with a parabola fit at
    the peak brings them to about a tenth of a pixel. Matches without a clear peak are dropped.
    """
    h, w = gr.shape
    win = _HALF + _SEARCH
    fl, fr = gl.astype(np.float32), gr.astype(np.float32)
    keep, refined = [], []
    for i, ((xl, yl), (xr, yr)) in enumerate(zip(pl, pr, strict=True)):
        cx, cy = round(float(xr)), round(float(yr))
        if not (win <= cx < w - win and win <= cy < h - win and win <= xl < w - win and win <= yl < h - win):
            continue
        patch = cv2.getRectSubPix(fl, (2 * _HALF + 1, 2 * _HALF + 1), (float(xl), float(yl)))
        score = cv2.matchTemplate(
            fr[cy - win : cy + win + 1, cx - win : cx + win + 1], patch, cv2.TM_CCOEFF_NORMED
        )
        _, best, _, (px, py) = cv2.minMaxLoc(score)
        if best < _MIN_NCC or not (0 < px < score.shape[1] - 1 and 0 < py < score.shape[0] - 1):
            continue
        dx = _parabola_peak(score[py, px - 1 : px + 2])
        dy = _parabola_peak(score[py - 1 : py + 2, px])
        keep.append(i)
        refined.append((cx - _SEARCH + px + dx, cy - _SEARCH + py + dy))
    return pl[keep].reshape(-1, 2), np.array(refined, np.float32).reshape(-1, 2)


def _parabola_peak(v: np.ndarray) -> float:
    """Sub-pixel offset of the peak of three samples around the middle one."""
    den = float(v[0] - 2 * v[1] + v[2])
    return 0.0 if den == 0 else 0.5 * float(v[0] - v[2]) / den
