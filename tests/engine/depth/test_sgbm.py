"""Tests for app.engine.depth.sgbm (OpenCV SGBM baseline) on synthetic rectified pairs."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from app.engine.depth.sgbm import SGBMEngine, SGBMParams, plane_probabilities, search_range
from app.engine.errors import UserError
from app.engine.types import DepthRequest, DepthResult, Mode

H, W = 120, 200
MAX_D = 32
BG_D, FG_D = 8, 20
# Foreground rectangle in left-image coordinates (rows y0:y1, columns x0:x1).
Y0, Y1, X0, X1 = 30, 90, 80, 150
NAN = np.nan


def _texture(seed_offset: int = 0) -> np.ndarray:
    """Random RGB texture wider than the image so shifted views need no padding."""
    rng = np.random.default_rng(seed_offset)
    tex = rng.integers(0, 256, (H, W + 40, 3), dtype=np.uint8)
    return cv2.GaussianBlur(tex, (3, 3), 0)


def constant_pair(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Pair with disparity ``d`` everywhere: right[:, x] = left[:, x + d]."""
    tex = _texture()
    return tex[:, :W].copy(), tex[:, d : d + W].copy()


def layered_pair() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Background layer at 8 px and a textured rectangle layer in front at 20 px.

    Returns left, right and the left-view truth. Each layer has its own texture, so the
    background the rectangle hides in one view is unseen rather than a copy of the rectangle.
    """
    bg, fg = _texture(0), _texture(1)
    left = bg[:, :W].copy()
    right = bg[:, BG_D : BG_D + W].copy()
    left[Y0:Y1, X0:X1] = fg[Y0:Y1, X0:X1]
    # The rectangle's left pixel x lands on right pixel x - 20.
    right[Y0:Y1, X0 - FG_D : X1 - FG_D] = fg[Y0:Y1, X0:X1]
    gt = np.full((H, W), float(BG_D), np.float32)
    gt[Y0:Y1, X0:X1] = FG_D
    return left, right, gt


def fg_interior(a: np.ndarray) -> np.ndarray:
    return a[Y0 + 5 : Y1 - 5, X0 + 5 : X1 - 5]


def bg_interior(a: np.ndarray) -> np.ndarray:
    """Background rows well above the rectangle, right of the unmatched border."""
    return a[5 : Y0 - 5, MAX_D + 5 : W - 5]


@pytest.fixture(scope="module")
def layered() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return layered_pair()


def run(layered: tuple[np.ndarray, np.ndarray, np.ndarray], **kwargs: object) -> DepthResult:
    left, right, _ = layered
    return SGBMEngine().compute(left, right, DepthRequest(max_disparity=MAX_D, **kwargs))  # type: ignore[arg-type]


def test_constant_disparity_is_recovered() -> None:
    left, right = constant_pair(BG_D)
    disp = SGBMEngine().disparity(left, right, MAX_D)
    assert disp.shape == (H, W) and disp.dtype == np.float32
    matched = disp[:, search_range(MAX_D) :]
    valid = np.isfinite(matched)
    assert valid.mean() > 0.9
    assert np.median(np.abs(matched[valid] - BG_D)) < 0.5


def test_unmatched_left_border_is_nan() -> None:
    left, right = constant_pair(BG_D)
    disp = SGBMEngine().disparity(left, right, MAX_D)
    assert np.isnan(disp[:, : search_range(MAX_D)]).all()
    assert not np.any(disp[np.isfinite(disp)] < 0)


def test_layered_scene_is_recovered(layered: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    left, right, gt = layered
    disp = SGBMEngine().disparity(left, right, MAX_D)
    err = np.abs(disp - gt)[:, MAX_D:]
    assert np.isfinite(err).mean() > 0.9
    assert np.nanmedian(err) < 0.5
    assert np.nanmedian(fg_interior(disp)) == pytest.approx(FG_D, abs=0.5)


def test_binary_mode(layered: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    res = run(layered, mode=Mode.BINARY, planes=(14,))
    assert res.mode is Mode.BINARY and res.engine == "sgbm"
    assert res.mask is not None and res.mask.dtype == np.bool_
    assert fg_interior(res.mask).mean() > 0.95
    assert not bg_interior(res.mask).any()
    assert np.isnan(res.disparity).all()
    assert res.probabilities.shape == (1, H, W)
    assert np.isin(res.probabilities[np.isfinite(res.probabilities)], [0.0, 1.0]).all()
    assert np.isnan(res.probabilities[0, :, :MAX_D]).all()
    assert not res.mask[:, :MAX_D].any()  # holes are not "closer"
    np.testing.assert_array_equal(res.planes, [14.0])


def test_quantized_mode_reports_bin_midpoints(layered: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    res = run(layered, mode=Mode.QUANTIZED, planes=(16, 4, 24, 12))
    np.testing.assert_array_equal(res.planes, [4.0, 12.0, 16.0, 24.0])
    assert res.probabilities.shape == (4, H, W)
    assert (fg_interior(res.disparity) == 20.0).mean() > 0.95
    assert (bg_interior(res.disparity) == 8.0).mean() > 0.95
    allowed = [2.0, 8.0, 14.0, 20.0, 28.0]  # midpoints with outer edges 0 and 32
    finite = res.disparity[np.isfinite(res.disparity)]
    assert np.isin(finite, allowed).all()
    assert np.isnan(res.disparity[:, :MAX_D]).all()


def test_selective_mode(layered: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    res = run(layered, mode=Mode.SELECTIVE, range=(10, 30))
    assert res.range_state is not None
    assert (bg_interior(res.range_state) == -1).mean() > 0.95
    assert (fg_interior(res.range_state) == 0).mean() > 0.95
    assert np.isnan(res.disparity[res.range_state != 0]).all()
    inside = fg_interior(res.disparity)
    assert np.nanmedian(np.abs(inside - FG_D)) < 0.5
    assert res.planes.min() >= 10 and res.planes.max() <= 30


def test_continuous_mode(layered: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    _, _, gt = layered
    res = run(layered, mode=Mode.CONTINUOUS)
    err = np.abs(res.disparity - gt)[:, MAX_D:]
    assert np.nanmedian(err) < 0.5
    assert res.range_state is None and res.mask is None
    assert res.probabilities.shape == (len(res.planes), H, W)
    assert set(res.timings) >= {"total"} and res.timings["total"] >= 0
    assert res.runtime == "opencv"


def test_continuous_answers_stay_within_the_maximum_asked_for(
    layered: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """OpenCV searches 0-31 px for a 0-18 px request: the rectangle at 20 px reads 18 px, the
    record's planes end at 18 px, and a note says what was nearer."""
    left, right, _ = layered
    res = SGBMEngine().compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=18))
    d = res.disparity[np.isfinite(res.disparity)]
    assert d.max() <= 18.0
    assert np.nanmedian(fg_interior(res.disparity)) == 18.0
    assert res.planes[-1] == 18.0
    (note,) = [n for n in res.notes if "nearer than the range reaches" in n]
    assert "(18 px) and read 18 px" in note
    res = SGBMEngine().compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=20))
    assert list(res.planes[-2:]) == [18.0, 20.0]  # the 3 px grid, then the top itself
    assert not any("nearer than the range reaches" in n for n in res.notes)


def test_timings_have_total(layered: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    res = run(layered, mode=Mode.BINARY, planes=(14,))
    assert res.timings["total"] == pytest.approx(res.timings["match"] + res.timings["readout"])


def test_compute_rejects_bad_pair() -> None:
    left, right = constant_pair(BG_D)
    with pytest.raises(UserError):
        SGBMEngine().compute(left, right[:, :-1], DepthRequest(max_disparity=MAX_D))


@pytest.mark.parametrize(("max_d", "expected"), [(192, 192), (68, 80), (1, 16), (16, 16), (17, 32)])
def test_search_range(max_d: float, expected: int) -> None:
    assert search_range(max_d) == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {"block_size": 4},
        {"block_size": 0},
        {"mode": "bogus"},
        {"p1": 100, "p2": 100},
        {"p1": 200, "p2": 100},
        {"p1": -1},
    ],
)
def test_sgbm_params_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(UserError):
        SGBMParams(**kwargs)  # type: ignore[arg-type]


def test_sgbm_penalties_defaults() -> None:
    assert SGBMParams(block_size=5).penalties() == (8 * 3 * 25, 32 * 3 * 25)
    assert SGBMParams(block_size=3).penalties() == (216, 864)
    assert SGBMParams(block_size=3, p1=10, p2=20).penalties() == (10, 20)


def test_sgbm_describe_marks_block_size_odd() -> None:
    specs = {s.name: s for s in SGBMParams.describe()}
    assert specs["block_size"].odd_only
    assert not specs["uniqueness"].odd_only


def test_plane_probabilities_with_hole() -> None:
    disp = np.array([[5.0, 15.0], [NAN, 10.0]], np.float32)
    probs = plane_probabilities(disp, np.array([10.0, 4.0]))
    assert probs.shape == (2, 2, 2) and probs.dtype == np.float32
    np.testing.assert_array_equal(probs[0], [[0.0, 1.0], [NAN, 0.0]])  # 10 > 10 is False
    np.testing.assert_array_equal(probs[1], [[1.0, 1.0], [NAN, 1.0]])


@pytest.mark.parametrize("auto", [True, False])
def test_images_narrower_than_the_range_search_what_fits(auto: bool) -> None:
    left, right = (im[:, :64].copy() for im in constant_pair(6))
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=192, auto_range=auto)
    result = SGBMEngine().compute(left, right, request)
    assert np.nanmedian(result.disparity) == pytest.approx(6, abs=0.5)
    if not auto:
        assert any("SGBM searched 0-48 px: the images are 64 px wide" in n for n in result.notes), (
            result.notes
        )


@pytest.mark.parametrize("auto", [False, True])
def test_planes_beyond_a_narrow_pair_name_its_width_and_levels_fit(auto: bool) -> None:
    """A 32 px pair's plane at 48 px read "outside [0, 16] px ... --max-disparity (16 px) bounds
    it", a maximum the user had not given; 20 levels failed as "outside [1, 15]" (review)."""
    rng = np.random.default_rng(0)
    left = rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)
    right = np.roll(left, -4, axis=1)
    engine = SGBMEngine()
    for request in (
        DepthRequest(mode=Mode.BINARY, planes=(48.0,), auto_range=auto),
        DepthRequest(mode=Mode.SELECTIVE, range=(10.0, 40.0), auto_range=auto),
    ):
        with pytest.raises(UserError, match=r"SGBM can match in a 32 px wide pair .*below 16 px"):
            engine.compute(left, right, request)
    result = engine.compute(left, right, DepthRequest(mode=Mode.QUANTIZED, levels=20, auto_range=auto))
    assert 1 <= len(result.planes) <= 15


def test_levels_spread_in_depth_fit_the_scene_s_span() -> None:
    """150 levels even in depth over the scene's 9-84 px failed as "levels 83 is outside [1, 74]",
    a count the user had not asked for (review of the levels' clamp)."""
    from app.engine.assets import demo_scene
    from app.engine.formats import read_image_rgb
    from app.engine.types import Calibration, Spacing

    left, right = (read_image_rgb(demo_scene() / n) for n in ("im0.png", "im1.png"))
    calibration = Calibration(focal_px=3979.9, baseline_m=0.19332)
    request = DepthRequest(
        mode=Mode.QUANTIZED, levels=150, spacing=Spacing.DEPTH, calibration=calibration, auto_range=True
    )
    result = SGBMEngine().compute(left, right, request)
    assert 1 < len(result.planes) < 150
    assert any(f"150 levels asked, {len(result.planes)} fit 1 px apart" in n for n in result.notes)
