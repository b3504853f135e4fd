"""Vertical alignment before matching: measured from feature matches, cancelled by resampling."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from app.engine.depth import alignment
from app.engine.depth.alignment import SWAPPED_NOTE, AlignConfig, VerticalAligner, measure
from app.engine.depth.sgbm import SGBMEngine
from app.engine.types import DepthRequest, Mode


def _pair(disparity: int = 12, down_px: float = 0.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A textured 240 x 320 pair, disparity ``disparity`` px; the right view's content ``down_px``
    lower than the left's."""
    rng = np.random.default_rng(seed)
    base = cv2.GaussianBlur(rng.uniform(0, 255, (240, 320 + disparity, 3)).astype(np.float32), (0, 0), 1.5)
    left = base[:, :320].round().astype(np.uint8)
    right = base[:, disparity:]  # left(x) = right(x - disparity)
    shift = np.float32([[1, 0, 0], [0, 1, down_px]])
    right = cv2.warpAffine(right, shift, (320, 240), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)
    return left, np.clip(right.round(), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("down_px", [0.8, -1.5])
def test_a_vertical_offset_is_measured_and_cancelled(down_px: float) -> None:
    left, right = _pair(down_px=down_px)
    found = measure(left, right)
    assert found is not None and found.matches >= 20
    assert abs(found.misalignment.shift_px + down_px) < 0.15  # dy = y_left - y_right = -down
    assert abs(found.rms_px - abs(down_px)) < 0.15
    moved, notes, _ = VerticalAligner().align(left, right)
    assert len(notes) == 1 and "calib check" in notes[0]
    _, straight = _pair(down_px=0.0)
    inner = (slice(10, -10), slice(10, -10))
    before = np.abs(right[inner].astype(float) - straight[inner]).mean()
    after = np.abs(moved[inner].astype(float) - straight[inner]).mean()
    assert after < 0.3 * before


def test_a_rectified_pair_passes_unchanged() -> None:
    left, right = _pair()
    moved, notes, _ = VerticalAligner().align(left, right)
    assert moved is right and not notes


def test_a_blank_pair_has_no_estimate_and_is_retried_every_few_frames(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    grey = np.full((240, 320, 3), 128, np.uint8)
    calls = []
    real = alignment._measure
    monkeypatch.setattr(alignment, "_measure", lambda *a: calls.append(1) or real(*a))
    aligner = VerticalAligner(AlignConfig(retry=3, every=50))
    for _ in range(7):
        moved, notes, _ = aligner.align(grey, grey)
        assert moved is grey and not notes
    assert len(calls) == 3  # frames 0, 3 and 6
    left, right = _pair(down_px=1.0)  # a new frame size starts afresh ...
    left, right = left[:200], right[:200]
    for _ in range(5):
        moved, notes, _ = aligner.align(left, right)
        assert notes
    assert len(calls) == 4  # ... and a found estimate is kept until ``every`` frames


def test_matches_scattered_about_any_plane_are_not_trusted() -> None:
    left, right = _pair(down_px=1.0)
    found = measure(left, right)
    assert found is not None
    strict = VerticalAligner(AlignConfig(max_scatter_px=found.scatter_px / 2))
    moved, notes, _ = strict.align(left, right)
    assert moved is right and not notes


def test_sgbm_matches_better_aligned_and_says_so(demo_dir) -> None:  # type: ignore[no-untyped-def]
    from app.engine.formats import read_image_rgb, read_pfm

    left, right = (read_image_rgb(demo_dir / name) for name in ("im0.png", "im1.png"))
    truth = read_pfm(demo_dir / "disp0GT.pfm")
    lowered = cv2.warpAffine(
        right, np.float32([[1, 0, 0], [0, 1, 1.5]]), right.shape[1::-1], flags=cv2.INTER_CUBIC
    )
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=96)
    on = SGBMEngine().compute(left, lowered, request)
    off = SGBMEngine(align=False).compute(left, lowered, request)
    assert any("vertical alignment" in n for n in on.notes)
    assert not any("vertical alignment" in n for n in off.notes)
    valid = np.isfinite(truth)

    def bad(d: np.ndarray) -> float:
        return float((np.abs(np.nan_to_num(d, nan=1e9) - truth)[valid] > 2).mean())

    straight = SGBMEngine().compute(left, right, request)
    assert not any("vertical alignment" in n for n in straight.notes)  # the demo pair is rectified
    assert bad(on.disparity) < bad(straight.disparity) + 0.01 < bad(off.disparity) - 0.04
    again = SGBMEngine().compute(left, lowered, request)
    assert np.array_equal(on.disparity, again.disparity, equal_nan=True)  # the same every run


def test_another_scene_of_the_same_size_is_measured_anew() -> None:
    aligner = VerticalAligner()
    left, right = _pair(down_px=1.2, seed=1)
    assert aligner.align(left, right)[1]
    # rectified, same size, other grey levels: nothing of the last one holds
    other_left, other_right = (image // 2 + 20 for image in _pair(seed=2))
    moved, notes, _ = aligner.align(other_left, other_right)
    assert moved is other_right and not notes
    blank = np.full_like(left, 90)
    assert aligner.align(left, right)[1]  # back: measured again at once
    assert aligner.align(blank, blank)[1] == []  # a view without an estimate keeps none


def test_a_moving_view_of_one_scene_is_not_measured_every_frame() -> None:
    """A pan (the synthetic demo, a camera on a robot) gave a new thumbnail every frame, and each
    was measured anew: 80-110 ms a frame (review). Its grey levels stay: measured once."""
    aligner = VerticalAligner()
    left, right = _pair(down_px=1.2, seed=1)
    assert aligner.align(left, right)[1]
    other_left, other_right = _pair(down_px=1.2, seed=3)  # the same texture's statistics, moved on
    calls: list[int] = []
    original = alignment._pair_geometry
    try:
        alignment._pair_geometry = lambda *a: (calls.append(1), original(*a))[1]  # type: ignore[assignment]
        _, notes, _ = aligner.align(other_left, other_right)
    finally:
        alignment._pair_geometry = original  # type: ignore[assignment]
    assert calls == [] and notes  # the rig's alignment still applies, unmeasured


def test_a_swapped_pair_is_named_in_a_note(demo_dir) -> None:  # type: ignore[no-untyped-def]
    from app.engine.formats import read_image_rgb

    left, right = (read_image_rgb(demo_dir / name) for name in ("im0.png", "im1.png"))
    assert SWAPPED_NOTE not in VerticalAligner().align(left, right)[1]
    notes = VerticalAligner().align(right, left)[1]  # the right camera's image given first
    assert SWAPPED_NOTE in notes
    swapped = SGBMEngine().compute(right, left, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=96))
    assert SWAPPED_NOTE in swapped.notes  # says what to do, not only noise


HANDHELD = Path(__file__).resolve().parents[2] / "data" / "opencv_handheld"


def test_an_unrectified_pair_is_named_in_a_note_not_called_swapped(demo_dir) -> None:  # type: ignore[no-untyped-def]
    from app.engine.formats import read_image_rgb

    # OpenCV's hand-held sample: rows 39 px RMS apart, turned by 24 degrees (its own calib check)
    left, right = (read_image_rgb(HANDHELD / name) for name in ("left.jpg", "right.jpg"))
    for pair in ((left, right), (right, left)):
        notes = VerticalAligner().align(*pair)[1]
        assert SWAPPED_NOTE not in notes and any("does not look rectified" in n for n in notes)
        assert "calib rectify" in notes[-1]
    demo = [read_image_rgb(demo_dir / name) for name in ("im0.png", "im1.png")]
    assert alignment.pair_geometry(*demo).vertical_rms_px < 1.0
    assert not any("rectified" in n for n in VerticalAligner().align(*demo)[1])
    # an offset the alignment corrects is not called unrectified, even past UNRECTIFIED_PX
    moved = cv2.warpAffine(demo[1], np.float32([[1, 0, 0], [0, 1, 4]]), demo[1].shape[1::-1])
    notes = VerticalAligner().align(demo[0], moved)[1]
    assert len(notes) == 1 and notes[0].startswith("vertical alignment")


@pytest.mark.parametrize("down_px", [5.0, -9.0])
def test_rows_several_px_apart_start_from_the_matches_plane_and_are_cancelled(demo_dir, down_px) -> None:  # type: ignore[no-untyped-def]
    """A plain 4-5 px shift was left as it was ("does not look rectified", exit 0, its depth
    wrong), where the calibration check measured it to 0.01 px (review): the feature matches'
    plane starts the measurement."""
    from app.engine.formats import read_image_rgb

    left, right = (read_image_rgb(demo_dir / name) for name in ("im0.png", "im1.png"))
    moved = cv2.warpAffine(right, np.float32([[1, 0, 0], [0, 1, down_px]]), right.shape[1::-1])
    aligner = VerticalAligner()
    notes = aligner.align(left, moved)[1]
    assert aligner.current is not None and abs(aligner.current.misalignment.shift_px + down_px) < 0.1
    assert len(notes) == 1 and notes[0].startswith("vertical alignment")


@pytest.mark.parametrize("size", [(16, 16), (24, 32), (40, 60), (64, 96)])
def test_frames_too_small_to_measure_pass_unchanged(size: tuple[int, int]) -> None:
    left, right = _pair(down_px=1.0)
    left, right = (
        np.ascontiguousarray(left[: size[0], : size[1]]),
        np.ascontiguousarray(right[: size[0], : size[1]]),
    )
    moved, notes, _ = VerticalAligner().align(left, right)
    assert moved is right and not notes


def test_an_unrectified_pair_drops_the_advice_to_shrink_the_images() -> None:
    """The hand-held pair read "not rectified" and "15 % of the answers read the top of the range:
    give the images at half size"; rectified, its scene reached 40 px."""
    from app.engine.depth.scene_range import ceiling_note, ceiling_remedy
    from tests.engine.fake_results import empty_result

    image = np.zeros((8, 8, 3), np.uint8)
    result = empty_result(image, "bi3d", Mode.CONTINUOUS)
    ceiling = ceiling_note(np.full((8, 8), 191.0), 192.0, ceiling_remedy(192))
    result.notes.extend(ceiling)
    kept = alignment.with_alignment(result, [alignment.unrectified_note(38.9)], 0.0)
    assert ceiling and not any(n in kept.notes for n in ceiling) and "not look rectified" in kept.notes[-1]
    result.notes.extend(ceiling)  # a rectified pair keeps it
    assert ceiling[0] in alignment.with_alignment(result, [], 0.0).notes
