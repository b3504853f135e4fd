"""--max-disparity auto: the per-frame reach estimate, its bound and its frame-to-frame tracker."""

from __future__ import annotations

import dataclasses

import numpy as np

from app.engine.depth.scene_range import DEFAULT_RANGE, RangeTracker, bound_for, estimate_reach
from app.engine.depth.sgbm import SGBMEngine
from app.engine.types import DepthRequest, Mode


def _pair(d: int, seed: int = 0, size: tuple[int, int] = (240, 320)) -> tuple[np.ndarray, np.ndarray]:
    import cv2

    h, w = size
    rng = np.random.default_rng(seed)
    base = cv2.GaussianBlur(rng.uniform(0, 255, (h, w + d, 3)).astype(np.float32), (0, 0), 1.0)
    base = base.round().astype(np.uint8)
    return base[:, :w].copy(), base[:, d : d + w].copy()  # left(x) = right(x - d)


def test_the_estimate_finds_the_reach_of_a_textured_scene() -> None:
    left, right = _pair(40)
    reach = estimate_reach(left, right, 192)
    assert reach is not None and 34 <= reach <= 46
    bound = bound_for(reach, 192)
    assert 48 <= bound <= 72 and bound % 3 == 0
    assert bound_for(reach, 40) == 40  # never above the ceiling


def test_a_small_frame_is_estimated_too() -> None:
    # 160 px wide: a search over the whole ceiling left the quarter-resolution match 8 columns
    from app.engine.sources.spec import open_source

    source = open_source("synthetic:120x160")
    try:
        frames = [source.read() for _ in range(2)]
    finally:
        source.close()
    for pair in frames:  # the second frame fell back to the ceiling ("too little texture")
        assert pair is not None and pair.gt_disparity is not None
        reach = estimate_reach(pair.left, pair.right, 144)
        top = float(np.percentile(pair.gt_disparity, 99.5))
        assert reach is not None and abs(reach - top) < 4, (reach, top)


def test_a_blank_frame_keeps_the_ceiling() -> None:
    grey = np.full((240, 320, 3), 128, np.uint8)
    assert estimate_reach(grey, grey, 192) is None
    assert bound_for(None, 192) == 192


def test_the_tracker_grows_at_once_and_shrinks_only_after_patience() -> None:
    near, far = _pair(60, seed=1), _pair(10, seed=2)
    tracker = RangeTracker()
    first = tracker.update(*near, 192).bound
    assert tracker.update(*far, 192).bound == first  # one far frame does not shrink it
    for _ in range(DEFAULT_RANGE.patience):
        got = tracker.update(*far, 192).bound
    assert got < first
    assert tracker.update(*near, 192).bound == first  # something near again: at once


def test_auto_bounds_continuous_requests_and_reports_the_sweep() -> None:
    left, right = _pair(30)
    engine = SGBMEngine()
    auto = engine.compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, auto_range=True))
    assert auto.searched is not None and auto.searched[1] < 192
    assert any("max disparity auto" in n for n in auto.notes)
    valid = np.isfinite(auto.disparity[20:-20, 80:-20])
    assert np.abs(auto.disparity[20:-20, 80:-20][valid] - 30).mean() < 1
    fixed = engine.compute(left, right, DepthRequest(mode=Mode.CONTINUOUS))
    assert fixed.searched is None
    # a binary plane is where it is asked; SGBM searches to the scene's bound past it, not to 192 px,
    # which left the left 192 columns without an answer, counted as "not closer" (review)
    binary = engine.compute(left, right, DepthRequest(mode=Mode.BINARY, planes=(20,), auto_range=True))
    assert binary.searched is not None and 36 <= binary.searched[1] < 192
    assert binary.planes.tolist() == [20.0]
    whole = engine.compute(left, right, DepthRequest(mode=Mode.BINARY, planes=(20,)))
    assert np.isnan(binary.probabilities[0]).mean() < np.isnan(whole.probabilities[0]).mean()
    levels = engine.compute(left, right, DepthRequest(mode=Mode.QUANTIZED, levels=4, auto_range=True))
    assert levels.searched is not None and levels.planes.max() < auto.searched[1]  # spread to the bound


def test_explicit_levels_keep_their_planes_and_the_bound_closes_their_top_bin() -> None:
    """Planes 12,24 on a 25 px scene read 108 px, the top bin's midpoint up to 192 px (review)."""
    left, right = _pair(25)
    engine = SGBMEngine()
    request = DepthRequest(mode=Mode.QUANTIZED, planes=(12.0, 24.0), auto_range=True)
    answer = engine.compute(left, right, request)
    assert list(answer.planes) == [12.0, 24.0] and answer.searched is not None
    top = answer.searched[1]
    assert 27 <= top < 96 and any(f"the top level ends at {top:g} px" in n for n in answer.notes)
    inside = answer.disparity[20:-20, 80:-20]
    assert np.nanmedian(inside) == (24.0 + top) / 2
    # planes beyond the scene's bound: the top bin still starts at the top plane, past it
    high = engine.compute(left, right, dataclasses.replace(request, planes=(12.0, 150.0)))
    assert high.searched is not None and high.searched[1] == 153
    # the maximum itself already closes the bin: nothing to bound
    plain = engine.compute(left, right, dataclasses.replace(request, planes=(12.0, 189.0)))
    assert plain.searched is None


def test_only_a_pixel_nearer_than_the_whole_upper_range_widens_the_sweep() -> None:
    import torch

    from app.engine.depth.scene_range import closer_than_top

    # 12 planes up to 96 px over a 576 x 768 input padded 96 rows at the top; logits at 1/6
    logits = torch.full((1, 12, 96, 128), -4.0)
    size, offset = (576, 768), (96, 0)
    logits[:, :, :16] = 4.0  # the zero padding "matches" at every plane: not counted
    logits[:, -1, 40:60, 60:80] = 4.0  # "closer" at the last plane only: a false run far beyond
    assert closer_than_top(logits, size, offset, 96.0) == 0.0
    logits[:, :, 40:60, 60:80] = 4.0  # nearer than every plane: the bound cut it off
    share = closer_than_top(logits, size, offset, 96.0)
    assert 0.05 < share < 0.1  # 400 of the region's pixels (away from the edges and the strip)
    logits[:, :, 40:60, :10] = 4.0  # in the strip the last plane's shift moves the right view out of
    assert closer_than_top(logits, size, offset, 96.0) == share


def test_levels_even_in_depth_span_the_scene_not_out_to_infinity() -> None:
    from app.engine.types import Calibration, Spacing

    left, right = _pair(30)  # the whole scene at 30 px
    request = DepthRequest(
        mode=Mode.QUANTIZED,
        levels=4,
        spacing=Spacing.DEPTH,
        calibration=Calibration(focal_px=500.0, baseline_m=0.1),
        auto_range=True,
    )
    result = SGBMEngine().compute(left, right, request)
    assert result.searched is not None
    # from 3 px (16.7 m) the nearest of 4 levels even in depth lay at 12 px, all beyond the scene
    assert result.planes.min() >= 15 and result.planes.max() <= result.searched[1]
    assert result.planes.min() < 30 < result.planes.max()
    assert any("the scene's far end" in n for n in result.notes)
    given = SGBMEngine().compute(left, right, dataclasses.replace(request, range=(3.0, 45.0)))
    assert given.planes.min() < 10  # an explicit --range is kept


def test_a_scene_nearer_than_an_auto_range_can_reach_is_said_and_what_to_do() -> None:
    """The demo at 720p moved 140 px nearer read a median 176 px of its 215 at the 192 px ceiling,
    without a word: a note now says so when the answers pile up at the top, with each engine's
    remedy, worded as each front end names its settings."""
    from app.engine.depth.scene_range import ceiling_note, ceiling_remedy
    from app.engine.errors import plain_words, word_settings

    near_left, near_right = _pair(60)  # nearer than a 48 px ceiling
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48, auto_range=True)
    result = SGBMEngine().compute(near_left, near_right, request)
    (note,) = [n for n in result.notes if "past the top of the range (48 px)" in n]
    assert note.startswith("the scene reaches about 6")
    assert note.endswith("(SGBM searches up to the image width)")
    assert word_settings(note, plain_words).count("max_disparity") == 1
    far = SGBMEngine().compute(*_pair(20), request)  # inside: no note
    assert not any("top of the range" in n for n in far.notes)
    fixed = SGBMEngine().compute(near_left, near_right, dataclasses.replace(request, auto_range=False))
    assert not any("top of the range" in n for n in fixed.notes)  # the fixed range's own note
    # the rule alone: 5 % of the answered pixels within one plane step of the top
    disparity = np.full((10, 10), 20.0)
    disparity[0, :6] = 190.0
    disparity[1:, 0] = np.nan
    (note,) = ceiling_note(disparity, 192, ceiling_remedy(192))
    assert note.startswith("7 % of the answers read the top of the range (192 px)")
    assert "this model reaches 192 px: give the images at half size" in word_settings(note, plain_words)
    disparity[0, :6] = 188.0  # more than a step below
    assert ceiling_note(disparity, 192, ceiling_remedy(192)) == []
    # an estimate whose room above does not fit under the ceiling: aloe's 148 px for 211 (review)
    (note,) = ceiling_note(disparity, 192, ceiling_remedy(192), estimate=148.0)
    assert note.startswith(
        "the scene may reach past the top of the range (192 px): its estimate is about 148"
    )
    assert ceiling_note(disparity, 192, ceiling_remedy(192), estimate=120.0) == []


def test_sgbm_under_a_maximum_short_of_the_scene_says_so() -> None:
    """A 30 px scene under a 16 px maximum read wrong matches inside the search (a median of 13 px
    for a 20 px wall in the review), with no note; Bi3D said it."""
    left, right = _pair(30)
    short = SGBMEngine().compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=16))
    assert any("the scene reaches about" in n and "past the 16 px searched" in n for n in short.notes), (
        short.notes
    )
    enough = SGBMEngine().compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=64))
    assert not any("the scene reaches" in n for n in enough.notes)


def test_a_ceiling_set_by_the_images_width_asks_for_nothing_impossible() -> None:
    """A 20 x 20 pair whose answers piled at 16 px was told to give the images at half size or
    smaller, below the 16 px an image must have (review)."""
    from app.engine.depth.scene_range import ceiling_remedy

    assert "half size" in ceiling_remedy(192, 192.0, 741)  # the model's reach: smaller images help
    narrow = ceiling_remedy(192, 16.0, 20)
    assert "half size" not in narrow and "only 20 px wide" in narrow
    assert "SGBM searches up to" not in ceiling_remedy(None, 16.0, 20)
