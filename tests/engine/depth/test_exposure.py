"""The exposure stretch before Bi3D: one mapping for both images, only for dark or flat pairs."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.depth.exposure import ExposureConfig, flat_pair_note, levels, stretch, stretch_table


def _image(lo: int, hi: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(lo, hi + 1, (60, 80, 3)).astype(np.uint8)


def test_a_well_exposed_pair_is_left_as_it_is() -> None:
    left, right = _image(0, 255), _image(0, 255, seed=1)
    out_l, out_r, note = stretch(left, right)
    assert out_l is left and out_r is right and note is None


def test_a_bright_but_flat_pair_is_left_as_it_is() -> None:
    left, right = _image(120, 250), _image(120, 250, seed=1)  # a blank, lit wall
    assert stretch(left, right)[2] is None


@pytest.mark.parametrize(("lo", "hi"), [(0, 60), (100, 155), (20, 120)])
def test_an_underexposed_pair_is_stretched_alike_to_the_target_span(lo: int, hi: int) -> None:
    left, right = _image(lo, hi), _image(lo, hi, seed=1)
    out_l, out_r, note = stretch(left, right)
    assert note is not None and "--no-exposure-stretch" in note
    new_lo, new_hi = levels(out_l, out_r)
    assert new_hi - new_lo >= 185  # the 192 levels asked for, less the percentiles' rounding
    assert 0 <= new_lo and new_hi <= 255
    table, gain = stretch_table(*levels(left, right))
    assert gain > 1
    assert np.array_equal(out_l, table[left]) and np.array_equal(out_r, table[right])  # one mapping
    assert np.all(np.diff(table.astype(int)) >= 0)  # the order of grey levels is kept


def test_the_stretch_is_continuous_at_the_threshold_and_bounded() -> None:
    table, gain = stretch_table(30, 222)  # exactly the target span: identity
    assert gain == 1.0 and np.array_equal(table, np.arange(256))
    _, gain = stretch_table(100, 101, ExposureConfig(max_gain=8.0))
    assert gain == 8.0  # a flat frame is not blown up without bound


def test_histogram_counts_every_level_of_its_rows_in_any_layout() -> None:
    from app.engine.depth.exposure import ROW_STEP, _histogram

    rng = np.random.default_rng(3)
    image = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    strided = image[:, ::2]  # not contiguous
    for img in (image, strided, image[..., 0]):
        want = np.bincount(img[::ROW_STEP].ravel(), minlength=256)
        assert np.array_equal(_histogram(img), want)


def test_only_a_pair_without_texture_is_flat() -> None:
    black = np.zeros((60, 80, 3), np.uint8)
    assert flat_pair_note(black, black) is not None
    assert flat_pair_note(black + 200, black + 201) is not None  # blank and saturated alike
    assert flat_pair_note(_image(120, 130), _image(120, 130, seed=1)) is None  # a dim wall's noise
    spot = black.copy()
    spot[20:30, 30:40] = 255  # a lit object on a black ground: 2 % of the pixels
    assert flat_pair_note(spot, spot) is None


def test_a_pair_of_identical_images_is_noted_by_both_engines() -> None:
    from app.engine.depth.exposure import IDENTICAL_NOTE, identical_pair_note
    from app.engine.depth.sgbm import SGBMEngine
    from app.engine.types import DepthRequest

    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (64, 96, 3), dtype=np.uint8)
    assert identical_pair_note(image, image.copy()) == IDENTICAL_NOTE
    assert identical_pair_note(image, np.roll(image, 2, axis=1)) is None
    result = SGBMEngine().compute(image, image.copy(), DepthRequest(max_disparity=16))
    assert IDENTICAL_NOTE in result.notes


def test_a_pair_exposed_apart_is_noted_by_both_engines() -> None:
    from app.engine.depth.engines import EngineOptions, build_engine
    from app.engine.depth.exposure import exposure_mismatch_note, view_histograms
    from app.engine.depth.sgbm import SGBMEngine
    from app.engine.types import DepthRequest

    rng = np.random.default_rng(0)
    left = rng.integers(60, 200, (64, 96, 3), dtype=np.uint8)
    right = np.roll(left, -4, axis=1)
    assert exposure_mismatch_note(*view_histograms(left, right)) is None
    dark = (right * 0.4).astype(np.uint8)  # the right camera at 0.4 x the left's exposure (review)
    note = exposure_mismatch_note(*view_histograms(left, dark))
    assert note is not None and note.startswith("exposure: the right image is 2.5 x darker than the left")
    assert "the left image is" in (exposure_mismatch_note(*view_histograms(dark, right)) or "")
    assert note in SGBMEngine().compute(left, dark, DepthRequest(max_disparity=16)).notes
    bi3d, _ = build_engine(EngineOptions(engine="bi3d"))
    assert note in bi3d.compute(left, dark, DepthRequest(max_disparity=16)).notes


def test_sgbm_answers_a_flat_pair_with_nothing_and_says_so() -> None:
    from app.engine.depth.sgbm import SGBMEngine
    from app.engine.types import FLAT_NOTE, DepthRequest

    black = np.zeros((64, 96, 3), np.uint8)
    # "70 % valid" and "the images are identical" of a black frame (review); Bi3D said "flat"
    result = SGBMEngine().compute(black, black.copy(), DepthRequest(max_disparity=16))
    assert not np.isfinite(result.disparity).any() and result.notes[0].startswith(FLAT_NOTE)
    assert not any("identical" in n or "top of the range" in n for n in result.notes)


def test_exposure_apart_needs_grey_levels_apart_and_names_a_black_view() -> None:
    from app.engine.depth.exposure import exposure_mismatch_note, view_histograms
    from app.engine.depth.sgbm import SGBMEngine
    from app.engine.types import DepthRequest, Mode

    rng = np.random.default_rng(1)
    night = rng.integers(4, 9, (64, 96, 3), dtype=np.uint8)  # a dark scene: 6 against 9 is no mismatch
    assert exposure_mismatch_note(*view_histograms(night, night + 3)) is None
    day = rng.integers(60, 200, (64, 96, 3), dtype=np.uint8)
    note = exposure_mismatch_note(*view_histograms(day, np.zeros_like(day)))
    assert note is not None and note.startswith("exposure: the right image is black (mean grey 0 against")
    # a flat pair's answer has no plane either: SGBM's 0/1 planes of a black frame were drawn (code review)
    black = np.zeros((64, 96, 3), np.uint8)
    binary = SGBMEngine().compute(
        black, black.copy(), DepthRequest(mode=Mode.BINARY, planes=(8.0,), max_disparity=16)
    )
    assert binary.probabilities is not None and np.isnan(binary.probabilities).all()


def _small_motorcycle() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The demo pair and its ground truth at 370 x 250 px."""
    import cv2

    from app.engine.assets import demo_scene
    from app.engine.formats import read_image_rgb, read_pfm

    scene = demo_scene()
    size = (370, 250)
    left, right = (
        cv2.resize(read_image_rgb(scene / name), size, interpolation=cv2.INTER_AREA)
        for name in ("im0.png", "im1.png")
    )
    truth = cv2.resize(read_pfm(scene / "disp0GT.pfm"), size, interpolation=cv2.INTER_NEAREST) * (370 / 741)
    return left, right, truth


def test_views_exposed_apart_are_matched_before_the_range_and_the_matchers() -> None:
    """Motorcycle with its right view at half brightness estimated a reach of 168 px (truth 60),
    swept to 192 px and read its top as a near wall; SGBM with the left view darker read 59 %
    dense bad-2 against 23 % as shot (review)."""
    from app.engine.depth.exposure import gain_matched
    from app.engine.depth.scene_range import estimate_reach
    from app.engine.depth.sgbm import SGBMEngine
    from app.engine.metrics import evaluate
    from app.engine.types import DepthRequest

    left, right, truth = _small_motorcycle()
    dark = (right * 0.5).astype(np.uint8)
    matched = gain_matched(left, dark)
    assert abs(float(matched[0].mean()) - float(matched[1].mean())) < 1.0  # one level for both
    assert gain_matched(left, right)[0] is left  # a pair exposed alike is left as it is
    assert estimate_reach(left, dark, 192) == pytest.approx(estimate_reach(left, right, 192), abs=2.0)
    request = DepthRequest(max_disparity=48)
    shot, apart = (
        evaluate(SGBMEngine().compute(left, r, request).disparity, truth)["dense"].bad2 for r in (right, dark)
    )
    assert apart < shot + 0.03
    from app.engine.depth.engines import EngineOptions, build_engine

    bi3d, _ = build_engine(EngineOptions(engine="bi3d", precision="fp32", runtime="torch"))
    auto = DepthRequest(max_disparity=192, auto_range=True)
    shot, apart = (
        evaluate(bi3d.compute(left, r, auto).disparity, truth)["dense"].bad2 for r in (right, dark)
    )
    assert apart < shot + 0.03  # the network sees gain too (23.3 % against 16.2 % at full size before)


def _tinted(image: np.ndarray, gains: tuple[float, float, float]) -> np.ndarray:
    return np.clip(image.astype(np.float32) * np.float32(gains), 0, 255).round().astype(np.uint8)


def test_views_white_balanced_apart_are_read_as_grey_and_said() -> None:
    from app.engine.depth.exposure import (
        TINT_WORDS,
        as_grey,
        gain_matched,
        pair_notes,
        tint_note,
        white_balanced,
    )

    left = _image(0, 200)  # no level clipped by the tint
    right = _tinted(left, (0.8, 1.0, 1.25))
    out_l, out_r = white_balanced(left, right)
    assert np.array_equal(out_l, as_grey(left)) and np.array_equal(out_r, as_grey(right))
    assert np.array_equal(out_l[..., 0], out_l[..., 2])  # grey in every channel
    assert gain_matched(left, right)[0][..., 1].tolist() == out_l[..., 1].tolist()
    note = tint_note(left, right)
    assert note is not None and TINT_WORDS in note and "red 0.80 x" in note and "blue 1.25 x" in note
    assert note in pair_notes(left, right)[1]
    # alike, slightly apart (1.04, as the blank-room renders at most), or both grey: as they are
    for base, other in ((left, left.copy()), (left, _tinted(left, (1.0, 1.04, 1.0))), (as_grey(left),) * 2):
        assert white_balanced(base, other)[0] is base and tint_note(base, other) is None
    # a grey camera's image (three equal channels) beside a colour one: aloe read 42.7 % (review)
    for pair, grey_side in (((as_grey(left), right), "left"), ((left, as_grey(right)), "right")):
        out_l, out_r = white_balanced(*pair)
        assert np.array_equal(out_l, as_grey(pair[0])) and np.array_equal(out_r, as_grey(pair[1]))
        said = tint_note(*pair)
        assert said is not None and f"the {grey_side} image is grey" in said


def test_a_pair_clipped_white_is_said() -> None:
    """Motorcycle at 1.5 x its exposure (20 % of it clipped white) read 23.5 % dense bad-2, unsaid
    (review); the blank-room renders clip up to 11 %."""
    from app.engine.depth.exposure import OVEREXPOSED_WORDS, pair_notes

    left = _image(0, 255)
    assert not [n for n in pair_notes(left, left[:, ::-1].copy())[1] if OVEREXPOSED_WORDS in n]
    bright = np.clip(left.astype(np.int32) * 2, 0, 255).astype(np.uint8)  # half of it clipped
    said = [n for n in pair_notes(bright, left)[1] if OVEREXPOSED_WORDS in n]
    assert len(said) == 1 and "% of the left image's channel values are at 255 (clipped white)" in said[0]
    said = [n for n in pair_notes(bright, bright[:, ::-1].copy())[1] if OVEREXPOSED_WORDS in n]
    assert len(said) == 1 and "% of the left and right images' channel values are at 255" in said[0]


def test_a_pair_white_balanced_apart_keeps_its_depth() -> None:
    """Motorcycle with the right view's red at 0.8 x and blue at 1.25 x: 72.8 % dense bad-2 at
    the defaults (16.2 % as shot); its green at 1.15 x 41.1 %. SGBM, on grey levels: 23 %."""
    from app.engine.depth.engines import EngineOptions, build_engine
    from app.engine.metrics import evaluate
    from app.engine.types import DepthRequest

    left, right, truth = _small_motorcycle()
    bi3d, _ = build_engine(EngineOptions(engine="bi3d", precision="fp32", runtime="torch"))
    auto = DepthRequest(max_disparity=192, auto_range=True)
    shot = evaluate(bi3d.compute(left, right, auto).disparity, truth)["dense"].bad2
    for gains in ((0.8, 1.0, 1.25), (1.0, 1.15, 1.0)):
        bi3d.new_stream()
        apart = evaluate(bi3d.compute(left, _tinted(right, gains), auto).disparity, truth)["dense"].bad2
        assert apart < shot + 0.03, gains
    # without the exposure stage, colours still (the README says so; code review)
    plain, _ = build_engine(
        EngineOptions(engine="bi3d", precision="fp32", runtime="torch", exposure_stretch=False)
    )
    apart = plain.compute(left, _tinted(right, (0.8, 1.0, 1.25)), auto)
    assert evaluate(apart.disparity, truth)["dense"].bad2 < shot + 0.03
    assert any(note.startswith("colour: the right image's colours differ") for note in apart.notes)


@pytest.mark.parametrize("engine_name", ["bi3d", "sgbm"])
def test_views_near_the_colour_threshold_do_not_flip_frame_by_frame(engine_name: str) -> None:
    """A stream whose views' colours were apart stays read as grey until they come within 1.03 x:
    near 1.06 x its frames read colour and grey by turns, and the depth flickered between them."""
    import torch

    from app.engine.bi3d.light import LightBi3D
    from app.engine.depth.bi3d import Bi3DEngine
    from app.engine.depth.exposure import TINT_WORDS
    from app.engine.depth.sgbm import SGBMEngine
    from app.engine.types import DepthRequest, Mode

    torch.manual_seed(0)
    engine = Bi3DEngine(LightBi3D(width=0.5), colour_choice=False) if engine_name == "bi3d" else SGBMEngine()
    left = np.repeat(_image(20, 200), 2, 0)
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)

    def grey_read(green: float) -> bool:
        result = engine.compute(left, _tinted(left, (1.0, green, 1.0)), request)
        return any(TINT_WORDS in n for n in result.notes)

    assert [grey_read(g) for g in (1.045, 1.07, 1.045, 1.045, 1.02, 1.045)] == [
        False,  # within 1.06 x: colour
        True,  # apart
        True,  # held while above 1.03 x
        True,
        False,  # within 1.03 x: released
        False,
    ]
    grey_read(1.07)
    engine.new_stream()
    assert not grey_read(1.045)  # a new stream starts at 1.06 x
