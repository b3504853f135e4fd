"""Calibrating a rig from a folder of target pairs: detection, per-view errors, dropping views.

Views are named by their left image. Pixels are px, board points metres.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from app.engine.calibration.chessboard import MIN_VIEWS, Coverage, find_stereo_pairs, view_parameters
from app.engine.calibration.fit import StereoFit, epipolar_rms, fit_stereo
from app.engine.calibration.rig import StereoRig
from app.engine.calibration.target import Target
from app.engine.errors import UserError


@dataclass(frozen=True, eq=False)
class ChessboardResult:
    """A stereo calibration and its quality figures (pixels; baseline in metres).

    ``view_errors_px`` (V x 2) are the (left, right) RMS reprojection errors of ``views``;
    ``outliers`` names the views whose error stands out, ``dropped`` those left out.
    """

    rig: StereoRig
    rms_px: float  # stereo reprojection error, from cv2.stereoCalibrate
    epipolar_rms_px: float  # RMS vertical gap of the corners after rectification
    baseline_m: float
    coverage: Coverage
    views: tuple[str, ...]
    skipped: tuple[str, ...]
    view_errors_px: np.ndarray
    outliers: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # e.g. the board in view is larger than the pattern given


@dataclass
class _Views:
    names: list[str] = field(default_factory=list)
    objects: list[np.ndarray] = field(default_factory=list)
    left: list[np.ndarray] = field(default_factory=list)
    right: list[np.ndarray] = field(default_factory=list)
    params: list[np.ndarray] = field(default_factory=list)
    first: np.ndarray | None = None  # the grey left image of the first view, for hints

    def without(self, drop: set[str]) -> _Views:
        keep = [i for i, n in enumerate(self.names) if n not in drop]
        return _Views(
            [self.names[i] for i in keep],
            [self.objects[i] for i in keep],
            [self.left[i] for i in keep],
            [self.right[i] for i in keep],
            [self.params[i] for i in keep],
        )


def _missing(left: bool, right: bool) -> str:
    """Why a pair gives no view, from where its board was found."""
    if left and right:
        return "the board's corners in the two images do not match"
    if left or right:
        return f"board not found in the {'right' if left else 'left'} image"
    return "board found in neither image"


def _size_misfit(grays: Sequence[np.ndarray], size: tuple[int, int], first: str) -> str | None:
    """Why a pair of grey images cannot join views of ``size`` (w, h) (the first pair's, ``first``),
    or None when it can."""
    (lh, lw), (rh, rw) = (g.shape[:2] for g in grays)
    if (lw, lh) != (rw, rh):
        return f"its left image is {lw}x{lh} and its right {rw}x{rh}"
    if (lw, lh) != size:
        return f"{lw}x{lh}, not the {size[0]}x{size[1]} of {first} (one calibration is of one image size)"
    return None


def _detect_folder(
    folder: str | Path, target: Target, on_view: Callable[[str, str | None], None] | None
) -> tuple[_Views, list[str], tuple[int, int], list[str]]:
    """Detect the target in every pair: (usable views, skipped names, image size, notes on the
    pairs skipped for their image size). The image size is the one most pairs have: where the
    first pair was of another, the pairs are looked at again at that size (two small pairs first
    had the ten others skipped, and the run failed)."""
    unpaired: list[str] = []  # images without a partner, left out
    pairs = find_stereo_pairs(folder, unpaired)
    found = _detect_pairs(pairs, target, None, on_view)
    if found.sizes:
        common, count = found.sizes.most_common(1)[0]
        if found.size is not None and common != found.size and count > found.sizes[found.size]:
            found = _detect_pairs(pairs, target, common, on_view)
    views, size = found.views, found.size
    if len(views.names) < MIN_VIEWS or size is None:
        alone = [f"{n} in the {side} image only" for side, n in found.one_side.items() if n]
        if found.misfits:
            alone.append(f"{len(found.misfits)} pair(s) skipped for their image size")
        more = f" (found {' and '.join(alone)})" if alone else ""
        if views.names and len(views.names) == len(pairs):  # every pair has it: too few pairs
            hint = f"capture {MIN_VIEWS - len(views.names)} more view(s) of the board"
        else:
            hint = target.hint(found.first if not views.names and not more else None)  # which board
        raise UserError(
            f"a {target.describe()} was found in both images of {len(views.names)} of {len(pairs)} pairs "
            f"in {folder}{more}; need {MIN_VIEWS}; {hint}"
        )
    return views, found.skipped, size, [*unpaired, *found.misfits]


@dataclass
class _Detected:
    views: _Views
    size: tuple[int, int] | None
    skipped: list[str] = field(default_factory=list)
    misfits: list[str] = field(default_factory=list)  # pairs of another image size than ``size``
    one_side: dict[str, int] = field(default_factory=lambda: {"left": 0, "right": 0})
    first: np.ndarray | None = None  # the first left image, for a hint when no image holds the target
    sizes: Counter[tuple[int, int]] = field(default_factory=Counter)  # of the pairs whose views agree


def _detect_pairs(
    pairs: Sequence[tuple[Path, Path]],
    target: Target,
    size: tuple[int, int] | None,
    on_view: Callable[[str, str | None], None] | None,
) -> _Detected:
    """The target in every pair of ``size`` (None: the first pair's)."""
    from app.engine.formats import read_image_rgb

    out = _Detected(_Views(), size)
    for lpath, rpath in pairs:
        try:
            grays = [cv2.cvtColor(read_image_rgb(path), cv2.COLOR_RGB2GRAY) for path in (lpath, rpath)]
        except UserError as exc:  # one damaged file left the run without figures (review)
            out.skipped.append(lpath.name)
            out.misfits.append(f"{lpath.name} was skipped: {exc}")
            if on_view is not None:
                on_view(lpath.name, str(exc))
            continue
        out.first = grays[0] if out.first is None else out.first
        if grays[0].shape == grays[1].shape:
            out.sizes[(grays[0].shape[1], grays[0].shape[0])] += 1
        out.size = out.size or (grays[0].shape[1], grays[0].shape[0])
        misfit = _size_misfit(grays, out.size, pairs[0][0].name if size is None else "most pairs")
        if misfit is not None:  # the pair is left out, not the whole run
            out.skipped.append(lpath.name)
            out.misfits.append(f"{lpath.name} was skipped: {misfit}")
            if on_view is not None:
                on_view(lpath.name, misfit)
            continue
        fl, fr = (target.detect(gray) for gray in grays)
        matched = target.match(fl, fr) if fl is not None and fr is not None else None
        views = out.views
        if matched is None:
            out.skipped.append(lpath.name)
            if (fl is None) != (fr is None):
                out.one_side["left" if fr is None else "right"] += 1
        else:
            assert fl is not None
            views.first = grays[0] if views.first is None else views.first
            views.names.append(lpath.name)
            views.objects.append(matched[0])
            views.left.append(matched[1])
            views.right.append(matched[2])
            views.params.append(view_parameters(target.full_view(fl), target.inner, out.size))
        if on_view is not None:
            on_view(lpath.name, None if matched is not None else _missing(fl is not None, fr is not None))
    return out


def calibrate_folder(
    folder: str | Path,
    target: Target,
    on_view: Callable[[str, str | None], None] | None = None,
    drop: Sequence[str] = (),
    drop_outliers: bool = False,
) -> ChessboardResult:
    """Detect the target in every pair of ``folder`` and calibrate the rig from the good ones.

    ``on_view(name, why)`` is called after each pair, for progress output (``why`` the pair
    was skipped, None when it is used). ``drop`` names
    views (left image names) to leave out; ``drop_outliers`` fits once more without the
    views whose reprojection error stands out.
    """
    views, skipped, size, misfits = _detect_folder(folder, target, on_view)
    larger = getattr(target, "larger_hint", None)  # a board OpenCV found part of
    notes = [*misfits]
    if larger is not None and views.first is not None:
        notes.append(larger(views.first, views.names[0]))
    unknown = sorted(set(drop) - set(views.names))
    if unknown:
        raise UserError(f"--drop {unknown[0]}: no such view; views are named by their left image")
    dropped = [n for n in views.names if n in set(drop)]
    kept = views.without(set(dropped))
    fit = _fit(kept, size)
    outliers = [n for n, bad in zip(kept.names, fit.outliers(), strict=True) if bad]
    if drop_outliers and outliers:
        dropped += outliers
        kept = views.without(set(dropped))
        fit = _fit(kept, size)
        outliers = [n for n, bad in zip(kept.names, fit.outliers(), strict=True) if bad]
    return ChessboardResult(
        rig=fit.rig,
        rms_px=fit.rms_px,
        epipolar_rms_px=epipolar_rms(fit.rig, kept.left, kept.right),
        baseline_m=fit.rig.rectified().baseline_m,
        coverage=Coverage.of(kept.params),
        views=tuple(kept.names),
        skipped=tuple(skipped),
        view_errors_px=fit.view_errors_px,
        outliers=tuple(outliers),
        dropped=tuple(dropped),
        notes=tuple(n for n in notes if n),
    )


def _fit(views: _Views, size: tuple[int, int]) -> StereoFit:
    if len(views.names) < MIN_VIEWS:
        raise UserError(f"only {len(views.names)} views are left after dropping; need {MIN_VIEWS}")
    return fit_stereo(views.objects, views.left, views.right, size)
