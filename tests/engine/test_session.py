"""The session's per-frame timings: what the latency plot draws."""

from __future__ import annotations

import numpy as np

from app.engine.depth.engines import EngineOptions
from app.engine.session import Session
from app.engine.types import DepthRequest, DepthResult, Mode, StereoPair
from tests.engine.fake_results import empty_result


class _TimedEngine:
    name = "bi3d"
    streams = 0

    def new_stream(self) -> None:
        self.streams += 1

    def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
        stages = {
            "features": 1.0,
            "planes": 2.0,
            "refine": 3.0,
            "readout": 4.0,
            "subpixel": 5.0,
            "agreement": 7.0,  # a stage the plot names no line for
            "total": 22.0,
            "align": 0.5,  # before the engine's total
        }
        return empty_result(left, self.name, request.mode, timings=stages)


def test_the_refine_entry_adds_up_every_stage_after_the_planes() -> None:
    session = Session(EngineOptions(engine="sgbm"))
    session.engine = _TimedEngine()  # type: ignore[assignment]
    image = np.zeros((96, 128, 3), np.uint8)
    frame = session.process(StereoPair(image, image), DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48))
    assert frame.timings["features"] == 1.0 and frame.timings["planes"] == 2.0
    assert frame.timings["refine"] == 3.0 + 4.0 + 5.0 + 7.0  # everything after the planes
    assert frame.timings["rectify"] >= 0.5  # the engine's alignment counts where the pair is prepared
    # the plot's depth stages add up to the time the controls show ("took 22 ms"), not less
    assert sum(frame.timings[s] for s in ("features", "planes", "refine")) == frame.depth.timings["total"]


def test_a_new_source_or_calibration_starts_the_engines_frame_to_frame_state_afresh() -> None:
    from app.engine.sources.synthetic import SyntheticSource

    session = Session(EngineOptions(engine="sgbm"))
    engine, baseline = _TimedEngine(), _TimedEngine()
    session.engine, session.baseline = engine, baseline  # type: ignore[assignment]
    session.set_source(SyntheticSource())
    assert engine.streams == baseline.streams == 1  # the range and the alignment are measured anew
    session.set_calibration(None)
    assert engine.streams == baseline.streams == 2
    session.set_source(SyntheticSource())
    assert engine.streams == 3


def test_swapped_views_reach_the_engine_and_the_panes_swapped_after_rectification() -> None:
    class _Seen(_TimedEngine):
        def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
            self.left = left
            return super().compute(left, right, request)

    class _Rectifier:  # marks which raw image it rectified
        def rectify(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return left + 1, right + 2

    session = Session(EngineOptions(engine="sgbm"))
    engine = _Seen()
    session.engine = engine  # type: ignore[assignment]
    session.set_calibration(None, _Rectifier())  # type: ignore[arg-type]
    raw = StereoPair(np.zeros((96, 128, 3), np.uint8), np.full((96, 128, 3), 10, np.uint8))
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)
    streams = engine.streams
    session.set_swap_views(True)
    assert engine.streams == streams + 1  # another pair: measured afresh
    frame = session.process(raw, request)
    assert int(engine.left[0, 0, 0]) == 12 and int(frame.pair.left[0, 0, 0]) == 12  # the raw right, rectified
    assert int(frame.pair.right[0, 0, 0]) == 1 and frame.raw is raw  # recordings keep the capture
    session.set_swap_views(True)
    assert engine.streams == streams + 1  # unchanged: nothing to measure again
    assert int(session.process(raw, request).pair.left[0, 0, 0]) == 12
    session.set_swap_views(False)
    assert int(session.process(raw, request).pair.left[0, 0, 0]) == 1


def test_the_sources_notes_reach_the_depth_and_the_window_finds_the_layout_one() -> None:
    source, process = _on_a_source(_TimedEngine())
    frame = process()
    assert Session.layout_note(frame) is None
    note = "video x.avi was opened top-bottom, but its frames look side by side (...): open it as ..."
    source.notes.append(note)
    frame = process()
    assert frame.depth.notes[0] == note and Session.layout_note(frame) == note


def _on_a_source(engine: _TimedEngine):  # type: ignore[no-untyped-def]
    """A session with ``engine`` on a synthetic source whose notes a test sets, and a call that
    answers one blank pair of it."""
    from app.engine.sources.synthetic import SyntheticSource

    session = Session(EngineOptions(engine="sgbm"))
    session.engine = engine  # type: ignore[assignment]
    source = SyntheticSource()
    session.set_source(source)
    image = np.zeros((96, 128, 3), np.uint8)
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)
    return source, lambda: session.process(StereoPair(image, image), request)


class _CountingFlow:
    """A flow backend that records which frames it was given (a frame's first pixel is its number)."""

    name = "fake"

    def __init__(self) -> None:
        self.pairs: list[tuple[int, int]] = []

    def compute(self, previous: np.ndarray, current: np.ndarray) -> np.ndarray:
        self.pairs.append((int(previous[0, 0, 0]), int(current[0, 0, 0])))
        return np.zeros((*current.shape[:2], 2), np.float32)


def test_flow_is_between_neighbouring_frames_only_and_a_held_frame_keeps_its_own(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """After a seek back (frame 9 to 2) and at each loop the window drew the flow between frames
    that are not neighbours (22 px where steps were 2-6); a paused frame answered again after a
    setting changed was compared with itself (a blank field)."""
    from app.engine.formats import write_color_png
    from app.engine.sources.spec import open_source

    for i in range(6):
        image = np.full((48, 64, 3), i, np.uint8)
        write_color_png(tmp_path / f"{i:03d}_left.png", image)
        write_color_png(tmp_path / f"{i:03d}_right.png", image)
    session = Session(EngineOptions(engine="sgbm"))
    session.engine = _TimedEngine()  # type: ignore[assignment]
    session.set_source(open_source(str(tmp_path)))
    flow = _CountingFlow()
    session.set_flow(flow)  # type: ignore[arg-type]
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=16)

    def next_frame() -> object:
        pair, _ = session.grab()
        assert pair is not None
        return session.process(pair, request)

    for _ in range(4):
        frame = next_frame()
    assert flow.pairs == [(0, 1), (1, 2), (2, 3)]
    again = session.process(frame.pair, request)  # held: a setting changed
    assert again.flow is frame.flow and flow.pairs[-1] == (2, 3)
    # another method on the held frame: its flow is computed again from the frame before (the
    # last method's image stood under a title that no longer matched: review)
    other = _CountingFlow()
    session.set_flow(other)  # type: ignore[arg-type]
    redone = session.process(frame.pair, request)
    assert other.pairs == [(2, 3)] and redone.flow is not None
    assert session.process(frame.pair, request).flow is redone.flow and other.pairs == [(2, 3)]
    flow = other
    session.seek(1)
    assert next_frame().flow is None and len(flow.pairs) == 1  # 3 -> 1 is no motion of the scene
    next_frame()
    assert flow.pairs[-1] == (1, 2)


def test_a_raw_rig_recorded_in_the_window_keeps_its_rig_and_is_rectified_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The window recorded a loaded rig's raw frames with only the rectified geometry: played
    back without the rig, they were matched unrectified (review)."""
    from app.engine.calibration.rig import Rectifier
    from app.engine.sources.spec import open_source
    from tests.engine.calibration.test_chessboard import SIZE, true_rig
    from tests.folders import pairs_folder

    rig = true_rig()
    rectifier = Rectifier(rig)
    raw_folder = pairs_folder(tmp_path / "raw", 2, size=(SIZE[1], SIZE[0]))
    session = Session(EngineOptions(engine="sgbm"))
    session.engine = _TimedEngine()  # type: ignore[assignment]
    session.output_root = tmp_path / "out"
    session.set_calibration(rectifier.calibration, rectifier)
    session.set_source(open_source(str(raw_folder)))
    raw, _ = session.grab()
    assert raw is not None
    recorder = session.start_recording(shown=raw)
    session.grab()
    session.stop_recording()
    assert recorder.frames_written == 2 and (recorder.folder / "rig.yml").is_file()
    # played back with the rig still loaded: rectified by the recording, not a second time
    session.set_source(open_source(str(recorder.folder)))
    played, _ = session.grab()
    assert played is not None
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)
    frame = session.process(played, request)
    expected = rectifier.rectify(raw.left, raw.right)
    np.testing.assert_array_equal(frame.pair.left, expected[0])
    assert (
        frame.calibration is not None
        and abs(frame.calibration.focal_px - rectifier.calibration.focal_px) < 1e-6
    )
    # a rig loaded for frames of another size is not kept with them
    session.set_calibration(rectifier.calibration, rectifier)
    session.set_source(open_source("synthetic:48x80?frames=2&seed=2"))
    session.grab()
    other = session.start_recording()
    session.grab()
    session.stop_recording()
    assert not (other.folder / "rig.yml").exists()


def test_sgbm_beside_bi3d_answers_the_planes_bi3d_s_budget_chose() -> None:
    """Quantized at 70 ms with 8 levels: Bi3D answered 4 planes, SGBM beside it all 8, and the
    Errors tab compared the two (review)."""
    from app.engine.session import alike

    class _Budgeted(_TimedEngine):
        def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
            result = super().compute(left, right, request)
            result.planes = np.array([9.0, 21.0, 33.0, 45.0], np.float32)
            result.mode = Mode.QUANTIZED
            result.choice = (
                {"planes": 4.0, "quantized": 1.0} if request.mode is Mode.CONTINUOUS else {"planes": 4.0}
            )
            return result

    class _Seen(_TimedEngine):
        def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
            self.request = request
            return super().compute(left, right, request)

    session = Session(EngineOptions(engine="sgbm"))
    baseline = _Seen()
    session.engine, session.baseline = _Budgeted(), baseline  # type: ignore[assignment]
    image = np.zeros((96, 128, 3), np.uint8)
    for mode in (Mode.QUANTIZED, Mode.CONTINUOUS):  # its own fewer levels; continuous's fallback
        request = DepthRequest(mode=mode, levels=8 if mode is Mode.QUANTIZED else None, budget_ms=70.0)
        session.process(StereoPair(image, image), request)
        assert baseline.request.mode is Mode.QUANTIZED and baseline.request.planes == (9.0, 21.0, 33.0, 45.0)
        assert baseline.request.budget_ms is None
    unbudgeted = DepthRequest(mode=Mode.QUANTIZED, levels=8)
    assert alike(unbudgeted, empty_result(image, "bi3d", Mode.QUANTIZED), 128) is unbudgeted
    # planes past what SGBM searches in a narrow pair are left to its own narrowing (given as
    # planes, SGBM refused them, and the frame with them)
    budgeted = DepthRequest(mode=Mode.QUANTIZED, levels=8, budget_ms=70.0)
    far = empty_result(image, "bi3d", Mode.QUANTIZED)
    far.planes, far.choice = np.array([30.0, 170.0], np.float32), {"planes": 2.0}
    assert alike(budgeted, far, 160) is budgeted and alike(budgeted, far, 640).planes == (30.0, 170.0)


def test_a_frame_is_answered_with_its_own_calibration_not_the_request_s() -> None:
    from app.engine.types import Calibration, Spacing

    session = Session(EngineOptions(engine="sgbm"))
    session.engine = _TimedEngine()  # type: ignore[assignment]
    image = np.zeros((96, 128, 3), np.uint8)
    demo = Calibration(focal_px=3997.7, baseline_m=0.193, doffs=31.1)  # the last source's
    own = Calibration(focal_px=640.0, baseline_m=0.12)
    # a request the window made while the demo played: a synthetic frame's snapshot saved its
    # depth in metres by the demo's f * B (review)
    stale = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48, calibration=demo)
    frame = session.process(StereoPair(image, image, calibration=own), stale)
    assert frame.request.calibration is own and frame.calibration is own
    frame = session.process(StereoPair(image, image), stale)  # a pair without one: pixels only
    assert frame.request.calibration is None and frame.calibration is None
    levels = DepthRequest(
        mode=Mode.QUANTIZED, levels=4, max_disparity=48, spacing=Spacing.DEPTH, calibration=demo
    )
    frame = session.process(StereoPair(image, image), levels)
    assert frame.request.spacing is Spacing.DISPARITY and frame.request.calibration is None


def test_auto_flow_names_the_method_it_chose() -> None:
    session = Session(EngineOptions(engine="sgbm"))
    status = session.set_flow_backend("auto")
    # the accelerator's absence alone was said, not what runs instead (review)
    assert session.flow is not None and status.startswith(f"auto chose {session.flow.name}: ")
    assert not session.set_flow_backend("dis").startswith("auto")


def test_no_range_advice_where_the_source_says_its_depth_is_noise() -> None:
    from app.engine.depth.scene_range import CEILING_WORDS

    class _AtTheTop(_TimedEngine):
        def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
            result = super().compute(left, right, request)
            result.notes.append(f"20 % of the answers read {CEILING_WORDS} (48 px): raise it")
            return result

    source, process = _on_a_source(_AtTheTop())
    assert any(CEILING_WORDS in n for n in process().depth.notes)
    # a mono video was called noise, then told to raise the range (review)
    source.notes = ["video a.avi does not look like a stereo video (0 side by side): depth from it is noise"]
    notes = process().depth.notes
    assert not any(CEILING_WORDS in n for n in notes) and any("noise" in n for n in notes)


def test_a_new_source_with_its_own_calibration_sets_the_one_in_use_aside() -> None:
    """A board calibration of another rig (640 x 480, as the synthetic scene) rectified the
    synthetic scene's frames into noise (review): a new source's own calibration wins; one loaded
    while it plays is the user's choice."""
    from app.engine.types import Calibration

    session = Session(EngineOptions(engine="sgbm"))
    session.engine = _TimedEngine()  # type: ignore[assignment]

    class _Warps:  # a raw rig's rectifier of the same frame size
        image_size = (128, 96)

        def rectify(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return left + 1, right + 1

    board = Calibration(focal_px=517.0, baseline_m=0.0833)
    own = Calibration(focal_px=128.0, baseline_m=0.12)
    image = np.zeros((96, 128, 3), np.uint8)
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)
    # given for the source before it opened (gui --calib on a dataset): kept (code review)
    session.set_calibration(board, _Warps())  # type: ignore[arg-type]
    session.set_source(_SilentSource())
    frame = session.process(StereoPair(image, image, calibration=own), request)
    assert frame.calibration is board and session.take_set_aside() is None
    session.set_source(_SilentSource())  # then another source with its own: the board goes
    frame = session.process(StereoPair(image, image, calibration=own), request)
    assert frame.calibration is own and int(frame.pair.left[0, 0, 0]) == 0  # not warped
    assert session.calibration is None and "carries its own calibration" in (session.take_set_aside() or "")
    session.set_calibration(board, _Warps())  # type: ignore[arg-type]  # loaded while it plays: used
    frame = session.process(StereoPair(image, image, calibration=own), request)
    assert frame.calibration is board and int(frame.pair.left[0, 0, 0]) == 1


class _SilentSource:
    notes: tuple[str, ...] = ()

    def close(self) -> None:
        pass


def test_another_min_confidence_over_an_answer_equals_answering_with_it() -> None:
    """The window's Min confidence applies to the answer already made (``Session.rethreshold``):
    the same pixels unknown as an answer made with that threshold."""
    import cv2

    from app.engine.assets import demo_scene
    from app.engine.depth.engines import build_engine
    from app.engine.formats import read_image_rgb
    from app.engine.types import FrameResult

    left, right = (
        cv2.resize(read_image_rgb(demo_scene() / name), (192, 144), interpolation=cv2.INTER_AREA)
        for name in ("im0.png", "im1.png")
    )
    bi3d, _ = build_engine(EngineOptions(engine="bi3d", precision="fp32", runtime="torch"))
    answers = {}
    for mode, extra in ((Mode.CONTINUOUS, {}), (Mode.SELECTIVE, {"range": (6.0, 18.0)})):
        for threshold in (0.3, 0.6, 0.0):
            request = DepthRequest(mode=mode, max_disparity=48, min_confidence=threshold, **extra)  # type: ignore[arg-type]
            answers[mode, threshold] = FrameResult(
                0, 0, StereoPair(left, right), request, bi3d.compute(left, right, request)
            )
        frame = answers[mode, 0.3]
        assert np.isnan(frame.depth.disparity).sum() > np.isnan(answers[mode, 0.0].depth.disparity).sum()
        for threshold in (0.6, 0.0, 0.3):
            assert Session.rethreshold(frame, threshold) and frame.request.min_confidence == threshold
            np.testing.assert_array_equal(frame.depth.disparity, answers[mode, threshold].depth.disparity)
    # an auto range at its ceiling: its note counts the answers at the top, counted again (each
    # move of the slider answered aloe afresh, 3 s: review)
    for auto, words in ((True, "the top of the range"), (False, "nearer than the range reaches")):
        for threshold in (0.0, 0.3, 0.6):
            request = DepthRequest(
                mode=Mode.CONTINUOUS, max_disparity=6, min_confidence=threshold, auto_range=auto
            )
            answer = bi3d.compute(left, right, request)
            answers[auto, threshold] = FrameResult(0, 0, StereoPair(left, right), request, answer)
        frame = answers[auto, 0.3]
        assert any(words in note for note in frame.depth.answer_notes)
        for threshold in (0.6, 0.0):
            assert Session.rethreshold(frame, threshold)
            np.testing.assert_array_equal(frame.depth.disparity, answers[auto, threshold].depth.disparity)
            assert frame.depth.notes == answers[auto, threshold].depth.notes
    binary = DepthRequest(mode=Mode.BINARY, planes=(12.0,), max_disparity=48)
    frame = FrameResult(0, 0, StereoPair(left, right), binary, bi3d.compute(left, right, binary))
    assert not Session.rethreshold(frame, 0.5)  # no threshold there: answered afresh


def test_a_rectified_pair_s_calibration_fitted_to_one_size_is_set_aside_by_frames_of_another() -> None:
    """A 641 x 555 pair's f and B (a Middlebury calib.txt) stayed in use over a 640 x 480 folder,
    its depth in metres unsaid, where loading it there is refused (re-check)."""
    from app.engine.types import Calibration

    session = Session(EngineOptions(engine="sgbm"))
    session.engine = _TimedEngine()  # type: ignore[assignment]
    loaded = Calibration(focal_px=1870.0, baseline_m=0.16)
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)
    session.set_source(_SilentSource())
    session.set_calibration(loaded, None, (128, 96))
    same = np.zeros((96, 128, 3), np.uint8)
    assert session.process(StereoPair(same, same), request).calibration is loaded
    other = np.zeros((48, 64, 3), np.uint8)
    frame = session.process(StereoPair(other, other), request)
    assert frame.calibration is None and session.calibration is None
    said = session.take_set_aside()
    assert said is not None and "for 128x96 frames but this source's are 64x48: it is set aside" in said
    session.set_calibration(loaded)  # no size known (given before any frame): kept
    assert session.process(StereoPair(other, other), request).calibration is loaded


def test_a_window_recording_keeps_the_time_its_source_s_stamps_count_from(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Only `record` kept start_time_ns; a recording made in the window of a ROS export did not
    (code review)."""
    import json

    from app.engine.sources.spec import open_source
    from tests.folders import pairs_folder

    folder = pairs_folder(tmp_path / "ros", 2, size=(40, 60))
    session = Session(EngineOptions(engine="sgbm"))
    session.engine = _TimedEngine()  # type: ignore[assignment]
    session.output_root = tmp_path / "out"
    source = open_source(str(folder))
    source.time_origin_ns = 1_700_000_000_000_000_000  # type: ignore[attr-defined]
    session.set_source(source)
    shown, _ = session.grab()
    recorder = session.start_recording(shown=shown)
    session.stop_recording()
    meta = json.loads((recorder.folder / "session.json").read_text())
    assert meta["start_time_ns"] == 1_700_000_000_000_000_000


def test_another_threshold_is_answered_afresh_where_the_notes_read_the_answers() -> None:
    """A flat pair's answers, or notes counting the answers at the ceiling, would be wrong under
    another threshold made from the answers kept (code review)."""
    from app.engine.types import FLAT_NOTE, FrameResult

    image = np.zeros((8, 8, 3), np.uint8)

    def frame(**change: object) -> FrameResult:
        depth = empty_result(image, "bi3d", Mode.CONTINUOUS)
        depth.confidence = np.ones((8, 8), np.float32)
        for name, value in change.items():
            setattr(depth, name, value)
        request = DepthRequest(mode=Mode.CONTINUOUS, min_confidence=0.0)
        return FrameResult(0, 0, StereoPair(image, image), request, depth)

    assert Session.rethreshold(frame(), 0.5)
    assert not Session.rethreshold(frame(answer_notes=["12 % read 48 px"], notes=["12 % read 48 px"]), 0.5)
    counted = frame(notes=["a", "12 % read 48 px", "b"], answer_notes=["12 % read 48 px"])
    counted.depth.recount_notes = lambda depth: [f"{np.isnan(depth.disparity).sum()} unknown"]
    assert Session.rethreshold(counted, 0.5)  # counted again from the answers under 0.5
    assert counted.depth.notes == ["a", "0 unknown", "b"] and counted.depth.answer_notes == ["0 unknown"]
    # none at the first threshold: a new one goes after the note they follow, as in a fresh answer
    # (it went after the runtime's and the budget's notes: code review)
    later = frame(notes=["plan", "runtime x", "took 90 ms"], answer_notes_after="plan")
    later.depth.recount_notes = lambda depth: ["at the top"]
    assert Session.rethreshold(later, 0.5) and later.depth.notes == [
        "plan",
        "at the top",
        "runtime x",
        "took 90 ms",
    ]
    # where the depth is noise (a mono video), "raise the range" is not counted back in (code review)
    from app.engine.depth.scene_range import CEILING_WORDS, drop_ceiling_notes

    top = f"45 % of the answers read {CEILING_WORDS} (48 px): raise it"
    noise = frame(notes=["depth is noise", top], answer_notes=[top])
    noise.depth.recount_notes = lambda depth: [top]
    drop_ceiling_notes(noise.depth)
    assert Session.rethreshold(noise, 0.5) and noise.depth.notes == ["depth is noise"]
    assert not Session.rethreshold(frame(notes=[f"{FLAT_NOTE} (grey levels 0-0)"]), 0.5)


class _TimedFile:
    """A seekable source whose frames carry times 50 ms apart (a 20 fps video)."""

    seekable = True
    has_times = True
    frame_count = 40

    def __init__(self, frame_number_times: bool = False) -> None:
        self.frame_number_times = frame_number_times
        self.frame_number = -1

    def read(self) -> StereoPair | None:
        self.frame_number += 1
        image = np.zeros((8, 8, 3), np.uint8)
        return StereoPair(image, image, 0.05 * self.frame_number)

    def seek(self, index: int) -> None:
        self.frame_number = index - 1

    def close(self) -> None:
        pass


def test_a_file_plays_no_faster_than_its_timestamps() -> None:
    """A 15 fps video played at 1.29 x real time where depth took 32 ms (review): frames are handed
    out no sooner than their times; a folder of pairs (frame numbers, not times) as fast as asked."""
    import time

    session = Session(EngineOptions(engine="sgbm"))
    session.set_source(_TimedFile())  # type: ignore[arg-type]
    t0 = time.monotonic()
    captures = [session.grab()[1] for _ in range(5)]
    assert time.monotonic() - t0 >= 0.19  # 4 intervals of 50 ms after the first frame
    assert max(captures) < 20  # the wait is not the capture's time (the latency plot draws it)
    session.seek(30)  # a seek starts the count again: no wait for the 1.3 s skipped
    t0 = time.monotonic()
    session.grab()
    assert time.monotonic() - t0 < 0.1
    session.set_source(_TimedFile(frame_number_times=True))  # type: ignore[arg-type]
    t0 = time.monotonic()
    for _ in range(5):
        session.grab()
    assert time.monotonic() - t0 < 0.1
