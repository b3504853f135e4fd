"""Stereo disparity metrics: EPE, bad-N and KITTI D1, dense and valid-only (numpy only).

Inputs are H x W disparities in pixels. Ground truth is valid where finite and > 0;
a prediction is valid where finite. "valid_only" scores only pixels where both are valid;
"dense" scores every GT-valid pixel and counts prediction holes against the method.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from app.engine.errors import UserError

KINDS: tuple[str, ...] = ("dense", "valid_only")
_KIND_LABELS = {"dense": "dense", "valid_only": "valid-only"}


@dataclass(frozen=True)
class StereoMetrics:
    """bad-N, D1 and density are fractions in [0, 1]; EPE is in pixels.

    ``n_valid_gt`` counts GT-valid pixels (inside the mask), the same for both kinds.
    """

    epe: float
    bad1: float
    bad2: float
    bad3: float
    d1: float
    density: float
    n_valid_gt: int


def fill_holes_kitti(pred: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Fill invalid pixels of H x W ``pred`` row-wise, as the KITTI devkit does.

    Each hole takes the smaller (farther) of the nearest valid values to its left and right;
    with only one side it takes that one, and rows without any valid pixel become 0.
    """
    h, w = pred.shape
    cols = np.broadcast_to(np.arange(w), (h, w))
    # Running index of the last valid pixel seen from the left (-1: none yet), and mirrored.
    left = np.maximum.accumulate(np.where(valid, cols, -1), axis=1)
    right = np.fliplr(np.maximum.accumulate(np.fliplr(np.where(valid, w - 1 - cols, -1)), axis=1))
    right = np.where(right >= 0, w - 1 - right, -1)
    rows = np.arange(h)[:, None]
    left_val = np.where(left >= 0, pred[rows, np.maximum(left, 0)], np.inf)
    right_val = np.where(right >= 0, pred[rows, np.maximum(right, 0)], np.inf)
    nearest = np.minimum(left_val, right_val)
    nearest = np.where(np.isfinite(nearest), nearest, 0.0)
    return np.where(valid, pred, nearest)


def _scores(err: np.ndarray, gt: np.ndarray, bad: np.ndarray, density: float, n_gt: int) -> StereoMetrics:
    """Metrics from 1-D errors and GT at scored pixels; ``bad`` marks pixels always counted bad."""
    if err.size == 0:
        nan = float("nan")
        return StereoMetrics(nan, nan, nan, nan, nan, density, n_gt)

    def frac(over: np.ndarray) -> float:
        return float(np.mean(over | bad))

    return StereoMetrics(
        epe=float(np.mean(err)),
        bad1=frac(err > 1.0),
        bad2=frac(err > 2.0),
        bad3=frac(err > 3.0),
        d1=frac((err > 3.0) & (err > 0.05 * gt)),
        density=density,
        n_valid_gt=n_gt,
    )


def evaluate(pred: np.ndarray, gt: np.ndarray, mask: np.ndarray | None = None) -> dict[str, StereoMetrics]:
    """Score H x W ``pred`` against H x W ``gt``; optional boolean H x W ``mask`` limits the area.

    Returns {"dense": ..., "valid_only": ...}.
    """
    p = np.asarray(pred, dtype=np.float64)
    g = np.asarray(gt, dtype=np.float64)
    if p.shape != g.shape or p.ndim != 2:
        raise UserError(f"prediction {p.shape} and ground truth {g.shape} differ; use matching H x W maps")
    with np.errstate(invalid="ignore"):
        gt_valid = np.isfinite(g) & (g > 0)
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        if m.shape != g.shape:
            raise UserError(f"mask {m.shape} does not match ground truth {g.shape}; use an H x W mask")
        gt_valid &= m
    n_gt = int(gt_valid.sum())
    if n_gt == 0:
        raise UserError("ground truth has no valid pixels (finite and > 0); check the GT file and mask")
    pred_valid = np.isfinite(p)
    both = gt_valid & pred_valid
    density = float(both.sum()) / n_gt

    filled = fill_holes_kitti(p, pred_valid)
    dense_err = np.abs(filled[gt_valid] - g[gt_valid])
    holes = ~pred_valid[gt_valid]
    only_err = np.abs(p[both] - g[both])
    return {
        "dense": _scores(dense_err, g[gt_valid], holes, density, n_gt),
        "valid_only": _scores(only_err, g[both], np.zeros(only_err.shape, bool), density, n_gt),
    }


def binary_agreement(probabilities: np.ndarray, planes: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """Per plane, the share of pixels with finite ground truth where the binary answer
    (P(disparity > plane) > 0.5) agrees with ``gt > plane``.

    probabilities P x H x W, planes (P,) in px (the planes asked for), gt H x W."""
    valid = np.isfinite(gt)
    above = np.asarray(planes, dtype=np.float64)[:, None, None] < gt[None]
    return ((probabilities > 0.5) == above)[:, valid].mean(axis=1)


def _fmt_pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100.0 * x:.1f}"


def format_table(rows: list[tuple[str, dict[str, StereoMetrics]]]) -> str:
    """Plain-text table, one line per (name, kind); percentages with one decimal."""
    header = ["name", "kind", "EPE", "bad-1%", "bad-2%", "bad-3%", "D1%", "density%"]
    lines = [header]
    for name, metrics in rows:
        for kind in KINDS:
            if kind not in metrics:
                continue
            m = metrics[kind]
            epe = "n/a" if math.isnan(m.epe) else f"{m.epe:.3f}"
            pcts = [_fmt_pct(v) for v in (m.bad1, m.bad2, m.bad3, m.d1, m.density)]
            lines.append([name, _KIND_LABELS[kind], epe, *pcts])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]

    def render(cells: list[str]) -> str:
        # Text columns left-aligned, numbers right-aligned so decimals line up.
        text = [c.ljust(w) for c, w in zip(cells[:2], widths[:2], strict=True)]
        nums = [c.rjust(w) for c, w in zip(cells[2:], widths[2:], strict=True)]
        return "  ".join(text + nums).rstrip()

    return "\n".join(render(line) for line in lines)


def to_json_dict(metrics: dict[str, StereoMetrics]) -> dict[str, dict[str, float | int | None]]:
    """Plain dict for ``json.dump``; NaN becomes None because JSON has no NaN."""
    out: dict[str, dict[str, float | int | None]] = {}
    for kind, m in metrics.items():
        out[kind] = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in asdict(m).items()}
    return out
