"""The before/after report of an adaptation, on frames held back from training.

Without ground truth three figures say whether the model fits the footage better:

- ``photometric_l1``: mean |left - right warped by the disparity| (grey levels, 0-255) over
  pixels whose match lies inside the right view: lower is better;
- ``lr_consistency``: share of the left disparities that the right view's disparity (the model
  on the mirrored pair) confirms within 1 px: higher is better;
- ``pseudo_bad2``: share of the confident classical pixels (``pseudo.confident_disparity``) the
  model misses by more than 2 px: lower is better.

With ground truth (synthetic footage, datasets) also ``dense_bad2`` (holes count as wrong) and
``epe``. Every figure is the mean over the frames, each answered by the app's engine in
continuous mode, as the user would see it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence

import cv2
import numpy as np

from app.engine.bi3d.model import SweepModel
from app.engine.depth.engines import EngineOptions, bi3d_engine
from app.engine.errors import Interrupted
from app.engine.metrics import evaluate
from app.engine.training.pseudo import lr_consistent
from app.engine.types import DepthRequest, Mode, StereoPair

FIGURES = ("photometric_l1", "lr_consistency", "pseudo_bad2", "dense_bad2", "epe")
# how each figure is said: words, unit, the factor from its stored value, whether higher is better
FIGURE_WORDS: dict[str, tuple[str, str, float, bool]] = {
    "photometric_l1": ("photometric error", "grey levels", 1.0, False),
    "lr_consistency": ("left-right agreement", "%", 100.0, True),
    "pseudo_bad2": ("confident SGBM pixels missed by > 2 px", "%", 100.0, False),
    "dense_bad2": ("dense bad-2 against ground truth", "%", 100.0, False),
    "epe": ("end-point error", "px", 1.0, False),
}
# a change smaller than this, in the figure's unit as said, is "about the same": the held-back
# frames answer a little differently after any training, and a 0.09-point change read "worse"
NOISE = {"grey levels": 0.1, "%": 0.25, "px": 0.02}


def describe(name: str, before: float, after: float) -> tuple[str, bool | None]:
    """One line of the before/after report, with its unit and which way is better, and whether
    the figure got better (None: about the same (``NOISE``), unknown, or a figure without a
    direction, such as frames)."""
    if name not in FIGURE_WORDS:
        return f"{name}: {before:.4g} -> {after:.4g}", None
    words, unit, factor, higher = FIGURE_WORDS[name]
    known = bool(np.isfinite(before) and np.isfinite(after))
    moved = known and abs(after - before) * factor >= NOISE[unit]
    better = (after > before) == higher if moved else None
    verdict = (", better" if better else ", worse") if moved else (", about the same" if known else "")
    way = "higher" if higher else "lower"
    line = f"{words} ({unit}, {way} is better): {_before_after(before * factor, after * factor)}{verdict}"
    return line, better


def _before_after(before: float, after: float) -> str:
    """Both figures to the same decimals, three significant digits of the larger ("11.2 -> 11"
    read as a figure of another precision: review)."""
    big = max((abs(v) for v in (before, after) if np.isfinite(v)), default=0.0)
    decimals = max(0, 2 - math.floor(math.log10(big))) if big > 0 else 2
    return f"{before:.{decimals}f} -> {after:.{decimals}f}"


DEPTH_FIGURES = ("dense_bad2", "pseudo_bad2")  # the depth's own figures, the ground truth's first


def adapt_warning(before: dict[str, float], after: dict[str, float]) -> str | None:
    """What the user must hear before using an adapted model: every figure got worse on the
    held-back frames, or its depth figure did (``depth_warning``); None when neither."""
    verdicts = [describe(k, v, after.get(k, float("nan")))[1] for k, v in before.items()]
    verdicts = [v for v in verdicts if v is not None]
    if verdicts and not any(verdicts):
        return "every figure is worse on the held-back frames: keep the model you started from"
    return depth_warning(before, after)


def depth_warning(before: dict[str, float], after: dict[str, float]) -> str | None:
    """A note when the held-back frames' depth figure (dense bad-2 where the footage has ground
    truth, else the confident SGBM pixels missed) got worse by adapting, else None: one run went
    from 0.84 to 4.45 % missed, the photometric error improved, and the model was written unsaid."""
    for name in DEPTH_FIGURES:
        if name in before and name in after:
            if describe(name, before[name], after[name])[1] is not False:
                return None
            words, unit, factor, _ = FIGURE_WORDS[name]
            figures = f"{before[name] * factor:.3g} -> {after[name] * factor:.3g} {unit}"
            return (
                f"the adapted model's depth is worse on the held-back frames ({words}: {figures}): keep "
                "the model you started from, or adapt on more or other footage"
            )
    return None


def photometric_l1(left: np.ndarray, right: np.ndarray, disparity: np.ndarray) -> float:
    """Mean absolute grey difference (0-255) between the left view and the right view sampled at
    x - disparity (bilinear), over pixels with a disparity whose match lies inside the right view."""
    gl = cv2.cvtColor(left, cv2.COLOR_RGB2GRAY).astype(np.float32)
    gr = cv2.cvtColor(right, cv2.COLOR_RGB2GRAY).astype(np.float32)
    h, w = gl.shape
    xs = np.arange(w, dtype=np.float32)[None, :] - np.nan_to_num(disparity, nan=-1e6)
    ys = np.arange(h, dtype=np.float32)[:, None].repeat(w, 1)
    valid = np.isfinite(disparity) & (xs >= 0) & (xs <= w - 1)
    if not valid.any():
        return float("nan")
    warped = cv2.remap(gr, xs.astype(np.float32), ys, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return float(np.abs(gl - warped)[valid].mean())


def label_bad2(disparity: np.ndarray, labels: np.ndarray) -> float:
    """Share of the labelled pixels (finite ``labels``) the disparity misses by more than 2 px
    (no answer counts as a miss)."""
    known = np.isfinite(labels)
    if not known.any():
        return float("nan")
    with np.errstate(invalid="ignore"):
        hit = np.abs(disparity[known] - labels[known]) <= 2.0
    return float(1.0 - hit.mean())


def frame_figures(
    answer: Callable[[np.ndarray, np.ndarray], np.ndarray], pair: StereoPair, labels: np.ndarray
) -> dict[str, float]:
    """The figures of one frame; ``answer(left, right)`` is the model's H x W disparity."""
    left, right = pair.left, pair.right
    disparity = answer(left, right)
    mirrored = answer(right[:, ::-1].copy(), left[:, ::-1].copy())[:, ::-1]
    finite = np.isfinite(disparity)
    lr = lr_consistent(disparity, np.ascontiguousarray(mirrored))
    out = {
        "photometric_l1": photometric_l1(left, right, disparity),
        "lr_consistency": float(lr.sum() / max(1, finite.sum())),
        "pseudo_bad2": label_bad2(disparity, labels),
    }
    if pair.gt_disparity is not None and np.isfinite(pair.gt_disparity).any():
        dense = evaluate(disparity, pair.gt_disparity)["dense"]
        out["dense_bad2"], out["epe"] = dense.bad2, dense.epe
    return out


def report(
    model: SweepModel,
    pairs: Sequence[StereoPair],
    labels: Sequence[np.ndarray],
    max_disparity: int,
    cancel: threading.Event | None = None,
    on_frame: Callable[[int], None] | None = None,
) -> dict[str, float]:
    """Mean figures over ``pairs`` (each with its confident-pixel ``labels``), the model answering
    through the app's engine (default options, torch runtime) in continuous mode up to ``max_disparity`` px.
    Raises ``Interrupted`` when ``cancel`` is set between frames."""
    was_training = model.training
    model.eval()
    # the torch runtime: the weights as they are now (the other runtimes export and cache graphs)
    engine = bi3d_engine(model, EngineOptions(runtime="torch"))
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=max_disparity)

    def answer(left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return engine.compute(left, right, request).disparity

    rows = []
    try:
        for i, (pair, label) in enumerate(zip(pairs, labels, strict=True)):
            if cancel is not None and cancel.is_set():
                raise Interrupted("adaptation cancelled")
            rows.append(frame_figures(answer, pair, label))
            if on_frame is not None:
                on_frame(i + 1)
    finally:
        model.train(was_training)
    keys = [k for k in FIGURES if all(k in r for r in rows)]
    return {k: float(np.nanmean([r[k] for r in rows])) for k in keys} | {"frames": len(rows)}
