"""Colour or grey levels: each stream is read the way its first frame's answers match the images better."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.depth.colour_choice import (
    GREY_WORDS,
    REDECIDE_AFTER,
    ColourChoice,
    is_colour,
    match_scores,
)
from app.engine.depth.exposure import TINT_WORDS, as_grey


def _textured_pair(shift: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A colour pair whose left view is its right view moved ``shift`` px right (disparity ``shift``)."""
    rng = np.random.default_rng(seed)
    right = rng.integers(0, 256, (60, 120, 3)).astype(np.uint8)
    left = np.roll(right, shift, axis=1)
    return left, right


def _tinted(image: np.ndarray, gains: tuple[float, float, float]) -> np.ndarray:
    return np.clip(image.astype(np.float32) * np.float32(gains), 0, 255).round().astype(np.uint8)


def test_the_reading_whose_answer_matches_the_images_is_kept() -> None:
    left, right = _textured_pair(6)
    right_answer, wrong_answer = np.full(left.shape[:2], 6.0), np.full(left.shape[:2], 11.0)
    good, bad = match_scores(left, right, (right_answer, wrong_answer))
    assert good > 0.9 > 0.2 > bad
    choice = ColourChoice()
    assert choice.due(left)
    assert choice.choose(left, right, colour=wrong_answer, grey=right_answer)
    note = choice.note()
    assert note is not None and GREY_WORDS in note and TINT_WORDS in note  # the window says it once
    assert choice.scores is not None and choice.scores[1] > choice.scores[0]
    assert not choice.choose(left, right, colour=right_answer, grey=wrong_answer) and choice.note() is None
    # nothing matched either way (noise): colour kept
    noise = np.random.default_rng(3).uniform(0, 40, left.shape[:2])
    assert not choice.choose(left, right, colour=noise, grey=noise + 0.1)


def test_pixels_either_answer_leaves_unknown_are_not_scored() -> None:
    """An answer that leaves its wrong pixels unknown must not score above one that answers them."""
    left, right = _textured_pair(6)
    full = np.full(left.shape[:2], 6.0)
    partial = full.copy()
    partial[:, :60] = np.nan  # unknown
    wrong_elsewhere = full.copy()
    wrong_elsewhere[:, :60] = 20.0
    a, b = match_scores(left, right, (partial, wrong_elsewhere))
    assert a == pytest.approx(b, abs=0.01)  # scored on the right half only, where both are right


def test_the_choice_is_made_again_on_a_new_stream_size_or_colour_balance() -> None:
    left, _ = _textured_pair()
    choice = ColourChoice()
    assert choice.due(left)
    choice.grey, choice.chosen_on = True, None
    choice.choose(left, left, np.zeros(left.shape[:2]), np.zeros(left.shape[:2]))
    assert not choice.due(left)
    choice.new_stream()
    assert choice.due(left) and choice.grey is None  # a new stream forgets the choice
    choice.choose(left, left, np.zeros(left.shape[:2]), np.zeros(left.shape[:2]))
    assert choice.due(left[:40])  # another frame size
    choice.choose(left[:40], left[:40], np.zeros((40, 120)), np.zeros((40, 120)))
    warmer = _tinted(left[:40], (1.0, 0.85, 0.7))
    for _ in range(REDECIDE_AFTER - 1):
        assert not choice.due(warmer)  # not at every frame of a moving camera
    assert choice.due(warmer)  # the camera's white balance moved: chosen again
    choice.choose(warmer, warmer, np.zeros((40, 120)), np.zeros((40, 120)))
    for _ in range(2 * REDECIDE_AFTER):
        assert not choice.due(warmer)  # the balance it was chosen on


def test_grey_cameras_and_colour_are_told_apart() -> None:
    left, _ = _textured_pair()
    assert is_colour(left) and not is_colour(as_grey(left)) and not is_colour(left[..., 0])


@pytest.mark.slow
def test_a_colour_cast_both_cameras_share_keeps_its_depth() -> None:
    """Motorcycle with both views' red at 0.8 x read 29.66 % dense bad-2 (16.24 % as shot); the
    same in grey levels 17.4 %. As shot it stays in colour, without the note."""
    from app.engine.assets import demo_scene
    from app.engine.depth.engines import EngineOptions, build_engine
    from app.engine.formats import read_image_rgb, read_pfm
    from app.engine.metrics import evaluate
    from app.engine.types import DepthRequest

    scene = demo_scene()
    left, right = (read_image_rgb(scene / name) for name in ("im0.png", "im1.png"))
    truth = read_pfm(scene / "disp0GT.pfm")
    bi3d, _ = build_engine(EngineOptions(engine="bi3d", precision="fp32", runtime="torch"))
    auto = DepthRequest(max_disparity=192, auto_range=True)
    shot = bi3d.compute(left, right, auto)
    assert evaluate(shot.disparity, truth)["dense"].bad2 < 0.17
    assert not [n for n in shot.notes if GREY_WORDS in n] and "colour_check" in shot.timings
    bi3d.new_stream()
    cast = bi3d.compute(_tinted(left, (0.8, 1.0, 1.0)), _tinted(right, (0.8, 1.0, 1.0)), auto)
    assert evaluate(cast.disparity, truth)["dense"].bad2 < 0.19
    assert [n for n in cast.notes if GREY_WORDS in n]
    # the stream's next frames are read in grey levels without reading them twice
    again = bi3d.compute(_tinted(left, (0.8, 1.0, 1.0)), _tinted(right, (0.8, 1.0, 1.0)), auto)
    assert "colour_check" not in again.timings and [n for n in again.notes if GREY_WORDS in n]
    assert np.array_equal(again.disparity, cast.disparity, equal_nan=True)


@pytest.mark.parametrize("mode", ["continuous", "quantized"])
def test_a_stream_read_in_grey_feeds_the_network_grey_levels_and_matches_in_colour(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frame that chooses reads the pair twice as a continuous request, the network reading
    the colours, then the grey levels (the matching stages read the colours both times, so that the
    readings differ by the network's input alone), and answers the request from the grey images; the
    next frames read the grey images once."""
    import torch

    from app.engine.bi3d.light import LightBi3D
    from app.engine.depth import searched
    from app.engine.depth.bi3d import Bi3DEngine
    from app.engine.types import DepthRequest, Mode

    torch.manual_seed(0)
    model = LightBi3D(width=0.5)
    seen: list[bool] = []  # per feature pass: did the network read grey levels?
    model.featnet.register_forward_hook(
        lambda _m, args, _out: seen.append(bool(torch.equal(args[0][:, 0], args[0][:, 2])))
    )
    matched: list[bool] = []  # per sub-pixel pass: did it match the colour images?
    refine = searched.refine_subpixel

    def refine_seen(left: torch.Tensor, right: torch.Tensor, *args: object) -> torch.Tensor:
        matched.append(not torch.equal(left[..., 0], left[..., 2]))
        return refine(left, right, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(searched, "refine_subpixel", refine_seen)
    choose = ColourChoice.choose

    def grey_wins(self: ColourChoice, *args: np.ndarray) -> bool:
        choose(self, *args)
        self.grey, self.scores = True, (0.5, 0.6)
        return True

    monkeypatch.setattr(ColourChoice, "choose", grey_wins)
    engine = Bi3DEngine(model, plane_check=None)
    left, right = _textured_pair(6)
    left, right = np.ascontiguousarray(np.repeat(left, 2, 0)), np.ascontiguousarray(np.repeat(right, 2, 0))
    request = (
        DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)
        if mode == "continuous"
        else DepthRequest(mode=Mode.QUANTIZED, levels=4, max_disparity=48)
    )
    first = engine.compute(left, right, request)
    dense = mode == "continuous"  # quantized answers have no sub-pixel stage
    assert seen == [False, True, True] and matched == ([True, True, False] if dense else [True, True])
    assert first.mode is Mode(mode) and "colour_check" in first.timings
    assert any(GREY_WORDS in n for n in first.notes)
    seen.clear()
    matched.clear()
    again = engine.compute(left, right, request)
    assert seen == [True] and matched == ([False] if dense else []) and "colour_check" not in again.timings
    assert any(GREY_WORDS in n for n in again.notes)


def test_the_choice_reads_with_sub_pixel_matching_where_the_engine_runs_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--no-subpixel`` leaves the engine's answers without the stage, but not the colour choice:
    without it a held-out synthetic scene read 10.8 % in colour and 19.1 % in grey levels chose grey."""
    import torch

    from app.engine.bi3d.light import LightBi3D
    from app.engine.depth import searched
    from app.engine.depth.bi3d import Bi3DEngine
    from app.engine.types import DepthRequest, Mode

    torch.manual_seed(0)
    model = LightBi3D(width=0.5)
    calls: list[int] = []
    refine = searched.refine_subpixel
    monkeypatch.setattr(searched, "refine_subpixel", lambda *a: calls.append(1) or refine(*a))
    monkeypatch.setattr(ColourChoice, "choose", lambda self, *a: setattr(self, "grey", False) or False)
    left, right = (np.ascontiguousarray(np.repeat(v, 2, 0)) for v in _textured_pair(6))
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)
    chosen = Bi3DEngine(model, subpixel=None).compute(left, right, request)
    assert len(calls) == 2  # the two readings of the choice, not the answer
    plain = Bi3DEngine(model, subpixel=None, colour_choice=False).compute(left, right, request)
    assert len(calls) == 2 and np.array_equal(chosen.disparity, plain.disparity, equal_nan=True)


def _light_engine():  # type: ignore[no-untyped-def]
    import torch

    from app.engine.bi3d.light import LightBi3D
    from app.engine.depth.bi3d import Bi3DEngine

    torch.manual_seed(0)
    return Bi3DEngine(LightBi3D(width=0.5), plane_check=None)


def _pair_192() -> tuple[np.ndarray, np.ndarray]:
    left, right = _textured_pair(6)
    return np.ascontiguousarray(np.repeat(left, 2, 0)), np.ascontiguousarray(np.repeat(right, 2, 0))


def test_a_choice_the_frame_cannot_take_reads_it_in_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    """A binary request on a pair too large for a full continuous reading's memory: the choice's
    continuous readings were refused, and with them every frame of the stream (code review)."""
    from app.engine.errors import UserError
    from app.engine.types import DepthRequest, Mode

    engine = _light_engine()
    check = engine._check_memory

    def continuous_too_large(request: DepthRequest, size: tuple[int, int]) -> None:
        if request.mode is Mode.CONTINUOUS:
            raise UserError("Bi3D continuous with 65 planes needs more memory than there is")
        check(request, size)

    monkeypatch.setattr(engine, "_check_memory", continuous_too_large)
    request = DepthRequest(mode=Mode.BINARY, planes=(12.0,), max_disparity=48)
    left, right = _pair_192()
    for _ in range(2):
        result = engine.compute(left, right, request)
        assert result.mode is Mode.BINARY and "colour_check" not in result.timings
    assert engine.colour is not None and engine.colour.grey is False
    # an engine without sub-pixel matching answers without it (the choice's readings had it on)
    engine = _light_engine()
    engine.subpixel = None

    def plain_continuous_too_large(request: DepthRequest, size: tuple[int, int]) -> None:
        if request.mode is Mode.CONTINUOUS and request.budget_ms is None:
            raise UserError("Bi3D continuous with 65 planes needs more memory than there is")

    monkeypatch.setattr(engine, "_check_memory", plain_continuous_too_large)
    budgeted = engine.compute(
        left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48, budget_ms=60_000)
    )
    assert "subpixel" not in budgeted.timings and engine.subpixel is None


def test_a_choosing_frame_keeps_a_new_stream_and_its_state_on_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The range tracker was swapped for copies while the frame chose: a new source asked for in
    that time started with the old one's range; a failed reading left its costs behind (code review)."""
    from app.engine.errors import Interrupted
    from app.engine.types import DepthRequest, Mode

    engine = _light_engine()
    left, right = _pair_192()
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48, auto_range=True)
    engine.compute(left, right, request)  # a first stream
    tracker = engine.ranges
    read = engine._read
    engine.new_stream()

    def new_source_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = read(*args, **kwargs)
        engine.new_stream()  # the window's thread: another source
        return result

    monkeypatch.setattr(engine, "_read", new_source_meanwhile)
    engine.compute(left, right, request)
    assert engine.ranges is tracker and tracker._stale  # the next frame starts the new stream afresh
    monkeypatch.undo()
    costs, state = engine.costs.costs.copy(), engine.ranges.state()

    def stopped_in_grey(left, right, request, grey):  # type: ignore[no-untyped-def]
        if grey:
            raise Interrupted("depth computation stopped")
        return read(left, right, request, grey)

    engine.new_stream()
    state = {**state, **{k: v for k, v in engine.ranges.state().items() if k not in state}}
    monkeypatch.setattr(engine, "_read", stopped_in_grey)
    before = engine.ranges.state()
    with pytest.raises(Interrupted):
        engine.compute(left, right, request)
    assert engine.costs.costs.keys() == costs.keys() and engine.ranges.state() == before
    assert engine.subpixel is not None and not engine._grey_network


def test_a_preview_leaves_the_choice_to_the_answer_in_full() -> None:
    """The window's quick answer of a still pair took the choice's two full readings first."""
    from app.engine.depth.engines import EngineOptions
    from app.engine.session import Session
    from app.engine.types import DepthRequest, Mode, StereoPair

    engine = _light_engine()
    session = Session(EngineOptions(engine="sgbm"))
    session.engine = engine  # type: ignore[assignment]
    left, right = _pair_192()
    quick = session.process(
        StereoPair(left, right), DepthRequest(mode=Mode.QUANTIZED, levels=6), preview=True
    )
    assert (
        "colour_check" not in quick.depth.timings and engine.colour is not None and engine.colour.grey is None
    )
    assert not engine.preview
    full = session.process(StereoPair(left, right), DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48))
    assert "colour_check" in full.depth.timings and engine.colour.grey is not None


def test_dark_views_and_answers_without_anything_to_score() -> None:
    from app.engine.depth.colour_choice import TRIES, balance

    left, _ = _textured_pair()
    dark = (left // 20).astype(np.uint8)
    assert balance(dark) is None and balance(left) is not None
    choice = ColourChoice()
    assert choice.due(dark)
    choice.choose(left, left, np.zeros(left.shape[:2]), np.zeros(left.shape[:2]), as_shot=dark)
    assert choice.grey is False and choice.chosen_on is None
    for _ in range(3 * REDECIDE_AFTER):  # no colour balance to follow: chosen once
        assert not choice.due(_tinted(dark, (1.0, 0.5, 0.5)))
    nothing = np.full(left.shape[:2], np.nan)
    fresh = ColourChoice()
    for _ in range(TRIES - 1):  # nothing scored: tried again on the next frames
        assert fresh.due(left) and not fresh.choose(left, left, nothing, nothing) and fresh.grey is None
    assert fresh.due(left) and not fresh.choose(left, left, nothing, nothing) and fresh.grey is False
    assert not fresh.due(left)
