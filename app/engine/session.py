"""The pipeline behind the UI: source -> rectify -> depth -> flow -> result, with timings.

A ``Session`` is the window's one door to the engine: it opens sources, owns the calibration,
the engines and the flow backend, writes snapshots, point clouds and recordings, and tells
subscribers what happened through ``events`` (as pymmcore-plus's core does). It does no
threading itself: the UI calls ``process`` from one worker thread (one call at a time) and
pulls frames with ``grab``. Everything it returns is a plain value the GUI thread can draw.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from app.engine import measure, pointcloud, snapshots
from app.engine.assets import demo_scene, resource_path
from app.engine.calibration.desk import CalibrationDesk
from app.engine.calibration.files import load_calibration
from app.engine.calibration.rig import StereoRig
from app.engine.depth.alignment import SWAPPED_NOTE, UNRECTIFIED_ADVICE, UNRECTIFIED_WORDS
from app.engine.depth.bi3d import OVER_BUDGET
from app.engine.depth.border import remask
from app.engine.depth.engines import DepthEngine, EngineOptions, build_engine
from app.engine.depth.exposure import EXPOSURE_MISMATCH_WORDS, IDENTICAL_NOTE, OVEREXPOSED_WORDS, TINT_WORDS
from app.engine.depth.scene_range import drop_ceiling_notes, widest_search
from app.engine.errors import UserError
from app.engine.fileio import atomic_write, config_dir, documents_dir
from app.engine.flow.base import PARAMETERS, FlowOptions, FlowParam
from app.engine.flow.choose import create_flow, resolve_backend
from app.engine.flow.draw import draw_flow_arrows, flow_color_with_legend, flow_scale
from app.engine.formats import COLORMAPS, colorize, read_image_rgb
from app.engine.metrics import evaluate
from app.engine.runtimes.select import FALLBACK as RUNTIME_FALLBACK
from app.engine.sources.base import plural
from app.engine.sources.files import left_first, right_partner
from app.engine.sources.layout import NOT_STEREO_MARK, depth_is_noise, noise_note
from app.engine.sources.recording import Pace, QueuedWriter, Recorder, dropped_note, progress_text
from app.engine.sources.spec import open_source
from app.engine.sources.video import CUT_SHORT_WORDS
from app.engine.training.adapt import AdaptCancelled, AdaptConfig, AdaptProgress, AdaptResult, adapt
from app.engine.training.adapt_report import describe
from app.engine.types import (
    FLAT_NOTE,
    Calibration,
    DepthRequest,
    DepthResult,
    FrameResult,
    Mode,
    Spacing,
    StereoPair,
    level_edges,
)

__all__ = [
    "NOT_STEREO_MARK",
    "OVER_BUDGET",
    "RUNTIME_FALLBACK",
    "UNRECTIFIED_ADVICE",
    "AdaptCancelled",
    "AdaptJob",
    "AdaptProgress",
    "AdaptResult",
    "Display",
    "EventHook",
    "FrameResult",
    "Session",
    "SessionEvents",
    "TruthError",
    "dropped_note",
    "left_first",
    "plural",
    "progress_text",
    "range_side",
    "right_partner",
]

LIVE_QUEUE_BYTES = 256 << 20  # a camera recording's frames waiting for the disk (about 1.5 s of 720p stereo)
STAGES = ("capture", "rectify", "features", "planes", "refine", "sgbm", "flow", "draw")
AFTER_PLANES = ("refine", "readout", "subpixel", "check")  # engine stages the "refine" entry adds up


SEEK_WHILE_RECORDING = "a recording keeps the frames in the order they play: stop recording to seek"
PACE_GAP_S = 1.0  # a file's next frame due later than this (a gap in a recording) is not waited for
REINDEX_MARK = "record --reindex"  # in a recording's notes that advise rebuilding its index


class FrameSource(Protocol):
    """What the session needs from a source: the next pair, or None when it has ended."""

    def read(self) -> StereoPair | None:
        """The next pair (RGB uint8 H x W x 3 copies), or None at the end."""
        ...

    def close(self) -> None: ...


class Rectifies(Protocol):
    def rectify(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A raw pair (H x W x 3) -> the rectified pair of the same size."""
        ...


class FlowBackend(Protocol):
    name: str

    def compute(self, previous: np.ndarray, current: np.ndarray) -> Any:
        """Flow from ``previous`` to ``current`` (H x W x 3 RGB uint8): H x W x 2 px, or a result
        that converts to it with ``np.asarray``."""
        ...


class EventHook:
    """One kind of event: callbacks ``connect``ed to it run, in order, when it is ``emit``ted.

    Callbacks run on the thread that emits (``process`` and ``grab`` run on the UI's worker);
    a UI re-emits them as queued signals to reach its own thread.
    """

    def __init__(self) -> None:
        self._callbacks: list[Callable[..., None]] = []

    def connect(self, callback: Callable[..., None]) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback: Callable[..., None]) -> None:
        self._callbacks.remove(callback)

    def emit(self, *args: Any) -> None:
        for callback in list(self._callbacks):
            callback(*args)


@dataclass
class SessionEvents:
    """What a session tells its subscribers."""

    source_changed: EventHook = field(default_factory=EventHook)  # (description: str)
    source_ended: EventHook = field(default_factory=EventHook)  # ()
    calibration_changed: EventHook = field(default_factory=EventHook)  # (Calibration | None)
    engine_changed: EventHook = field(default_factory=EventHook)  # (reason: str)
    result: EventHook = field(default_factory=EventHook)  # (FrameResult)


@dataclass(frozen=True)
class TruthError:
    """One engine's answer against ground truth."""

    engine: str
    error: np.ndarray  # H x W |disparity - truth| px (a wrong side: ERROR_SIDE_PX), NaN unknown
    bad2: float  # dense: holes count as wrong (selective: over the truth inside the range; binary: NaN)
    epe: float  # px
    # binary, selective and quantized: the share of the pixels with ground truth answered on their
    # side of the plane, of the range (farther, inside, closer), or in their level; None for continuous
    side: float | None = None
    what: str = ""  # binary: "30 px" (the plane); selective: "20-60 px" (the range); "8 levels"
    mode: Mode = Mode.CONTINUOUS  # the scored answer's (SGBM beside a budget's quantized answer differs)


class AdaptJob:
    """One adaptation of the depth model to a source's footage, run by whoever calls ``run``
    (the window: on a thread of its own, never the frame worker). ``cancel`` stops it between
    steps; its progress is kept in ``OUT.partial`` and a new job with the same settings resumes."""

    def __init__(self, config: AdaptConfig) -> None:
        self.config = config
        self._cancel = threading.Event()

    @property
    def out(self) -> Path:
        return Path(self.config.out)

    def run(self, progress: Callable[[AdaptProgress], None] | None = None) -> AdaptResult:
        """Blocks until done; ``progress`` is called on the running thread. ``UserError`` when the
        input is refused or the job was cancelled (its message says how to resume)."""
        return adapt(self.config, progress, self._cancel)

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()


class Display:
    """How results are drawn (colour maps, flow colours and arrows); the UI renders with these."""

    colormaps = COLORMAPS
    colorize = staticmethod(colorize)
    flow_color = staticmethod(flow_color_with_legend)
    flow_arrows = staticmethod(draw_flow_arrows)
    flow_scale = staticmethod(flow_scale)  # px of flow the colour wheel's rim (or clamp) stands for


class Session:
    desk = CalibrationDesk()  # the calibration panel's tools (boards, checks, fits, files)

    def __init__(self, options: EngineOptions | None = None) -> None:
        self._lock = threading.Lock()
        # set to stop a long computation early (a closing window); engines check it between planes
        self.interrupt = threading.Event()
        self.options = options or EngineOptions()
        self.engine: DepthEngine
        self.engine_reason = ""
        self.engine, self.engine_reason = self._build(self.options)
        self.baseline: DepthEngine | None = None
        self.source: FrameSource | None = None
        self.calibration: Calibration | None = None
        self.rectifier: Rectifies | None = None
        self._set_aside: str | None = None  # why the calibration was set aside, until taken
        self._fresh = False  # the next frame processed is the new source's first
        self._calibrated_on: object | None = None  # the source current when the calibration was set
        self._calibration_size: tuple[int, int] | None = None  # the frames a rectified pair's fits
        self.flow: FlowBackend | None = None
        self.swap_views = False  # the source's right image is the left camera's (process swaps them)
        self._previous_left: np.ndarray | None = None
        self._previous_number: int | None = None  # its frame number, for a file's frames
        self._grabbed: tuple[StereoPair | None, int | None] = (None, None)  # the last grab, its number
        # the last flow's frame, its flow, and the left image it was computed from (a held frame's
        # flow is computed again from it when the method changes)
        self._flow_of: tuple[StereoPair | None, np.ndarray | None, np.ndarray | None] = (None, None, None)
        self._frames = 0
        self.events = SessionEvents()
        self.recorder: Recorder | None = None
        self._recorder_on_capture = False
        self._ended_recording: Recorder | None = None  # finished by a change of source, not yet reported
        self._failed_recording: tuple[Recorder, str] | None = None  # stopped by a write error, not yet said
        self._recording_lock = threading.Lock()  # the capture thread writes, the GUI thread stops
        self._writer: QueuedWriter | None = None  # a live source's queue to the recorder
        self._pace = Pace(max_wait=PACE_GAP_S)  # a file's playback held to its timestamps (``grab``)
        self.stopped_writer: QueuedWriter | None = None  # the last stopped one's, for its counts
        self.output_root = documents_dir()  # snapshots/, recordings/ and point clouds go below it

    # ---- configuration (GUI thread; takes effect at the next process call) ---------------
    def set_engine(self, options: EngineOptions) -> str:
        """Build the engine the options describe; a ``UserError`` leaves the old one in place."""
        engine, reason = self._build(options)
        with self._lock:
            self.options, self.engine, self.engine_reason = options, engine, reason
        self.events.engine_changed.emit(reason)
        return reason

    def _build(self, options: EngineOptions) -> tuple[DepthEngine, str]:
        engine, reason = build_engine(options, "binary")
        if hasattr(engine, "interrupt"):
            engine.interrupt = self.interrupt
        return engine, reason

    def load_weights(self, path: str | Path) -> str:
        """Run Bi3D with the checkpoint at ``path`` (checked first: a bad file keeps the engine)."""
        return self.set_engine(dataclasses.replace(self.options, engine="bi3d", weights=Path(path)))

    @staticmethod
    def adapt_figures(result: AdaptResult) -> list[str]:
        """The held-back frames' figures before -> after, in words, as `adapt` prints them (the
        window said "photometric_l1 33.400 -> 30.100")."""
        return [
            describe(name, before, result.after.get(name, float("nan")))[0]
            for name, before in result.before.items()
            if name != "frames"
        ]

    def adapt(
        self,
        source: str,
        out: str | Path,
        *,
        steps: int | None = None,
        minutes: float | None = None,
        frames: int | None = None,
        eval_frames: int | None = None,
    ) -> AdaptJob:
        """A job that fine-tunes the current Bi3D weights (the bundled model when none are set) to
        the footage of ``source`` (a spec) and writes ``out``; budgets default as on the command line.
        The output is checked when the job runs, before any training."""
        weights = str(self.options.weights) if self.options.weights is not None else None
        config = AdaptConfig(source, str(out), weights)
        return AdaptJob(
            dataclasses.replace(
                config,
                steps=config.steps if steps is None else steps,
                minutes=config.minutes if minutes is None else minutes,
                frames=config.frames if frames is None else frames,
                eval_frames=config.eval_frames if eval_frames is None else eval_frames,
            )
        )

    def set_compare(self, compare: bool) -> None:
        """Run SGBM beside the main engine (when the main engine is not SGBM already)."""
        baseline = None
        if compare and self.engine.name != "sgbm":
            baseline, _ = build_engine(dataclasses.replace(self.options, engine="sgbm"))
        with self._lock:
            self.baseline = baseline

    @staticmethod
    def cuda_available() -> bool:
        """Whether this machine has a CUDA device torch can use (the Device choice "cuda")."""
        import torch  # loaded already by the engines; here only when asked

        return bool(torch.cuda.is_available())

    # ---- the user's files ---------------------------------------------------------------------
    @staticmethod
    def config_dir() -> Path:
        """Where the app keeps its settings (``app.engine.fileio.config_dir``)."""
        return config_dir()

    @staticmethod
    def write_file(path: Path, data: bytes) -> None:
        """Write ``data`` to ``path`` atomically: a crash leaves the old file or the new one."""
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)

    # ---- sources --------------------------------------------------------------------------
    @staticmethod
    def open_source(spec: str) -> FrameSource:
        """Open the source ``spec`` names (``app.engine.sources.spec``); not yet used."""
        return open_source(spec)

    @staticmethod
    def icon_files() -> list[Path]:
        """The app's icon in every size it ships (PNG)."""
        return sorted(resource_path("icons").glob("*.png"))

    @staticmethod
    def demo_spec() -> str:
        """The bundled Middlebury scene: a folder, so its calibration and ground truth come along."""
        return str(demo_scene())

    def set_source(self, source: FrameSource, description: str = "") -> None:
        """Switch to a new, already opened source; the old one is closed.

        Everything derived from the old source goes with it: the previous frame for flow, and a
        calibration that came with the old source's frames (a loaded file stays).
        """
        # a recording belongs to the source it was started on: finished here, and kept for the
        # window to say where it went (``take_ended_recording``)
        self._ended_recording = self.stop_recording() or self._ended_recording
        with self._lock:
            old, self.source = self.source, source
            self._pace.reset()
            self._previous_left, self._flow_of = None, (None, None, None)
            self._new_stream()
            self._fresh = True
            if self.calibration is not None and self._calibrated_on is None:  # given before it opened
                self._calibrated_on = source  # (gui --calib): for this source
        if old is not None and old is not source:
            old.close()
        self.events.source_changed.emit(description)

    def seek(self, index: int) -> None:
        """Make frame ``index`` of the source the next one grabbed (files, recordings, videos)."""
        source = self.source
        if source is None or not getattr(source, "seekable", False):
            raise UserError(
                "this source cannot seek (a camera, an endless or unnumbered stream); pause and step"
            )
        if self.recorder is not None and index != int(getattr(source, "frame_number", -1)) + 1:
            # a recording keeps frames in the order they are read: a seek back recorded frames 5-9,
            # then 6-30 again, with times that went back (review)
            raise UserError(SEEK_WHILE_RECORDING)
        source.seek(index)  # type: ignore[attr-defined]
        self._pace.reset()

    def position(self) -> tuple[int, int | None, float]:
        """The source's last frame number, its frame count (None: unknown) and that frame's time."""
        source = self.source
        if source is None:
            return -1, None, 0.0
        number = int(getattr(source, "frame_number", -1))
        count = getattr(source, "frame_count", None) if getattr(source, "seekable", False) else None
        stamp = source.timestamp_of(max(number, 0)) if count else 0.0  # type: ignore[attr-defined]
        return number, count, float(stamp)

    # ---- calibration (the session owns it) ---------------------------------------------------
    def set_calibration(
        self,
        calibration: Calibration | None,
        rectifier: Rectifies | None = None,
        size: tuple[int, int] | None = None,
    ) -> None:
        """Use ``calibration`` for depth in metres (and ``rectifier`` for raw pairs); None: the
        source's. ``size``: the frames (w, h) a rectified pair's calibration was fitted to, so that
        frames of another size set it aside as a rig's size does (a 641 x 555 pair's f and B gave a
        640 x 480 folder metres, unsaid: review)."""
        with self._lock:
            self.calibration, self.rectifier = calibration, rectifier
            self._calibration_size = size if rectifier is None and calibration is not None else None
            self._calibrated_on = self.source
            self._new_stream()  # rectified anew: the alignment and the range are measured again
        self.events.calibration_changed.emit(calibration)

    def hold_source(self, held: bool) -> None:
        """Paused in the window (``held``) or playing again: a source whose time can wait (the
        synthetic scene) waits; a camera goes on."""
        self._pace.reset()  # played again: from the frame shown, not from before the pause
        hold = getattr(self.source, "hold", None)
        if hold is not None:
            hold(held)

    def set_swap_views(self, swap: bool) -> None:
        """Take the source's right image as the left camera's and its left as the right's (cameras
        given the wrong way round: the depth engines note it when most features match at negative
        disparity). Applied after rectification; recordings keep the pairs as captured."""
        with self._lock:
            if self.swap_views != swap:
                self.swap_views = swap
                self._new_stream()  # another pair: the alignment and the range are measured again

    @staticmethod
    def looks_swapped(result: FrameResult) -> bool:
        """Whether the engine found the frame's images the wrong way round (``set_swap_views``)."""
        return SWAPPED_NOTE in result.depth.notes

    @staticmethod
    def identical_note(result: FrameResult) -> str | None:
        """The engine's note that the frame's two images are the same pixels, or None."""
        return IDENTICAL_NOTE if IDENTICAL_NOTE in result.depth.notes else None

    @staticmethod
    def rethreshold(result: FrameResult, min_confidence: float) -> bool:
        """The frame's answer at another min confidence, in place and without a new answer, where
        the engine kept its answers before the threshold (Bi3D's continuous and selective depth):
        True when done, its display to be made again (a move of the slider took 3 s on the aloe
        pair: review)."""
        depth = result.depth
        before = depth.unmasked
        if before is None and result.request.min_confidence <= 0:
            before = depth.disparity  # no threshold applied: the answers are whole
        if (
            depth.confidence is None
            or before is None
            or (depth.answer_notes and depth.recount_notes is None)
            or FLAT_NOTE in " ".join(depth.notes)
            or depth.mode in (Mode.BINARY, Mode.QUANTIZED)
        ):
            return False
        depth.disparity = remask(before, depth.confidence, min_confidence)
        depth.unmasked = before if min_confidence > 0 else None
        if depth.recount_notes is not None:  # the notes that count answers, counted again (aloe
            # reaches the auto range's ceiling: each move of the slider took 3 s there: review)
            old = depth.answer_notes
            kept = [note for note in depth.notes if note not in old]
            # where the old ones stood, or after the note they follow (a new one went after the
            # runtime's and the budget's notes, unlike a fresh answer's: code review)
            at = next((i for i, note in enumerate(depth.notes) if note in old), None)
            if at is None:
                after = depth.answer_notes_after
                at = kept.index(after) + 1 if after in kept else 0
            depth.answer_notes = depth.recount_notes(depth)
            depth.notes = kept[:at] + depth.answer_notes + kept[at:]
        result.request = dataclasses.replace(result.request, min_confidence=min_confidence)
        result.display = None
        return True

    @staticmethod
    def input_notes(result: FrameResult) -> list[tuple[str, str]]:
        """The engine's notes on the pair's images a user can act on, as (kind, note): "colour"
        (views in colours set apart, read as grey), "clipped" (a view clipped white)."""
        kinds = (("colour", TINT_WORDS), ("clipped", OVEREXPOSED_WORDS))
        return [(kind, n) for kind, words in kinds for n in result.depth.notes if words in n]

    @staticmethod
    def exposure_note(result: FrameResult) -> str | None:
        """The engine's note that one image of the pair is much darker than the other, or None."""
        return next((n for n in result.depth.notes if EXPOSURE_MISMATCH_WORDS in n), None)

    @staticmethod
    def unrectified_note(result: FrameResult) -> str | None:
        """The engine's note that the frame's pair is not rectified (``alignment.unrectified_note``)."""
        return next((n for n in result.depth.notes if UNRECTIFIED_WORDS in n), None)

    @staticmethod
    def layout_note(result: FrameResult) -> str | None:
        """The source's note that its frames look like the other layout (side by side against
        top-bottom), or like no stereo pair at all; or None."""
        return next((n for n in result.depth.notes if noise_note(n)), None)

    @staticmethod
    def index_note(result: FrameResult) -> str | None:
        """The recording's note that its index hides frames or needs rebuilding (said with the
        first frame only, it went by unseen in the window: review); or None."""
        return next((n for n in result.depth.notes if REINDEX_MARK in n), None)

    def _new_stream(self) -> None:
        for engine in (self.engine, self.baseline):
            if engine is not None:
                engine.new_stream()

    @staticmethod
    def check_image(path: str) -> None:
        """A ``UserError`` when ``path`` is not an image the sources can read (said before the
        window asks for the other view of the pair: review)."""
        read_image_rgb(path)

    @staticmethod
    def read_calibration(path: str) -> tuple[Calibration, StereoRig | None]:
        """A calibration file (Middlebury, OpenCV YAML/XML, ROS, stereodemo JSON), checked, and
        the full rig when the file has one (to rectify raw pairs)."""
        return load_calibration(path)

    # ---- optical flow ---------------------------------------------------------------------
    @staticmethod
    def flow_parameters(name: str) -> tuple[FlowParam, ...]:
        """The parameters of the backend ``name`` stands for (``auto`` resolved as it would run)."""
        return PARAMETERS.get(resolve_backend(name), ()) if name != "off" else ()

    def set_flow(self, backend: FlowBackend | None) -> None:
        """Flow by ``backend`` from the next answer on; a held frame's (an ended or paused source)
        is computed again from the frame before it (it kept the last method's image, its title
        saying otherwise: review)."""
        with self._lock:
            pair, _, before = self._flow_of
            self.flow, self._flow_of = backend, (pair, None, before)

    def set_flow_backend(self, name: str, values: dict[str, Any] | None = None) -> str:
        """Flow by the backend ``name`` (``off``: none) with its parameter ``values``; a status line.

        A backend that cannot run turns flow off and says why.
        """
        if name == "off":
            self.set_flow(None)
            return ""
        try:
            backend = create_flow(name, FlowOptions(**(values or {})))
        except UserError as exc:
            self.set_flow(None)
            return exc.raw
        except TypeError as exc:  # a parameter this backend does not take
            self.set_flow(None)
            return f"{name} does not take these parameters ({exc})"
        self.set_flow(backend)
        status = str(getattr(backend, "status", backend.name))
        # auto's line gave the accelerator's absence alone, not the method running (review)
        return f"auto chose {backend.name}: {status}" if name == "auto" else status

    # ---- what the user keeps ---------------------------------------------------------------
    def snapshot(self, result: FrameResult, source: str = "", view: dict[str, Any] | None = None) -> Path:
        """The frame's depth files, its pair and SGBM's answer when comparing, in a new folder
        under ``output_root/snapshots`` (``snapshots.write_snapshot``)."""
        untimed = bool(getattr(self.source, "frame_number_times", False))  # a folder's frame numbers
        # the seek bar's seconds count from the source's first frame, a recording's too (its source
        # times, kept, may start anywhere): the snapshot said 1.1 s of a frame shown at 0.90 s (review)
        start = None
        if getattr(self.source, "seekable", False) and getattr(self.source, "has_times", False):
            start = float(self.source.timestamp_of(0))  # type: ignore[union-attr]
        return snapshots.write_snapshot(
            result, self.output_root, source, view, timed=not untimed, start_s=start
        )

    def export_point_cloud(self, result: FrameResult, path: Path | None = None) -> tuple[Path, int]:
        """The frame's points as PLY (default: a new file under ``output_root/pointclouds``)."""
        if path is None:
            folder = snapshots.new_folder(self.output_root, "pointclouds")
            path = folder.with_suffix(".ply")
            path.parent.mkdir(parents=True, exist_ok=True)
        return path, snapshots.export_point_cloud(result, path)

    def calibration_path(self, name: str) -> Path:
        """A new file for a calibration made in the window, ``output_root/calibrations/
        YYYYmmdd-HHMMSS-name.yaml`` (its folder made)."""
        slug = "-".join("".join(c if c.isalnum() else " " for c in name.lower()).split()) or "calibration"
        folder = snapshots.new_folder(self.output_root, "calibrations")
        path = folder.with_name(f"{folder.name}-{slug}.yaml")
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    @staticmethod
    def point_cloud(result: FrameResult) -> tuple[np.ndarray, np.ndarray]:
        """N x 3 points (metres) and N x 3 colours of the frame; needs a calibration."""
        return snapshots.frame_point_cloud(result)

    # ---- ground truth ------------------------------------------------------------------------
    @staticmethod
    def truth_errors(result: FrameResult) -> list[TruthError]:
        """Against the pair's ground truth (demo, synthetic, datasets): per engine shown, the
        H x W map of |disparity - truth| (NaN where either is unknown) with dense bad-2 and EPE.
        A binary answer is scored by the side of its plane each pixel is on, a selective one by
        the side of the range and, inside it, by its disparity: selective's pixels outside the
        range, answered there rightly, counted as wrong (37.9 % bad-2 at 20-60 px, 84 % at 20-40),
        and binary mode said "no ground truth" of the demo (review). Empty without ground truth."""
        gt = result.pair.gt_disparity
        answers = [a for a in (result.depth, result.baseline) if a is not None]
        if gt is None or not answers or not np.any(np.isfinite(gt) & (gt > 0)):
            return []
        out = []
        for answer in answers:
            if answer.disparity.shape != gt.shape:
                continue
            if answer.mode is Mode.BINARY:
                out.append(_binary_truth(answer, gt))
            elif answer.mode is Mode.SELECTIVE and answer.range_state is not None and result.request.range:
                out.append(_selective_truth(answer, gt, result.request.range))
            elif answer.mode is Mode.QUANTIZED and len(answer.planes):
                out.append(_quantized_truth(answer, gt, level_edges(answer, result.request.max_disparity)))
            else:
                scores = evaluate(answer.disparity, gt)["dense"]
                with np.errstate(invalid="ignore"):
                    error = np.where(gt > 0, np.abs(answer.disparity - gt), np.nan).astype(np.float32)
                out.append(TruthError(answer.engine, error, scores.bad2, scores.epe, mode=answer.mode))
        return out

    # ---- measuring ---------------------------------------------------------------------------
    @staticmethod
    def require_metric(result: FrameResult, what: str) -> None:
        """``pointcloud.require_metric``: a ``UserError`` saying why ``what`` cannot be had."""
        pointcloud.require_metric(result, what)

    @staticmethod
    def distance_m(result: FrameResult, a: tuple[int, int], b: tuple[int, int]) -> float:
        """3D distance (metres) between pixels ``a`` and ``b`` (x, y) of the frame's depth."""
        pointcloud.require_metric(result, "a distance")
        outside_range_refusal(result, a, b)
        return measure.distance_m(result.depth.disparity, result.calibration, a, b)

    @staticmethod
    def region_stats(result: FrameResult, x0: int, y0: int, x1: int, y1: int) -> measure.RegionStats:
        """Fill rate, mean distance and plane-fit RMS of a rectangle of the frame's depth; without
        a calibration its disparities' figures alone (it said "needs a calibration": review)."""
        if result.depth.mode is Mode.BINARY:  # no depth at all (metres: with a calibration)
            pointcloud.require_metric(result, "measuring a region")
        return measure.region_stats(result.depth.disparity, result.calibration, x0, y0, x1, y1)

    @staticmethod
    def histogram(
        result: FrameResult, bins: int = 64, box: tuple[int, int, int, int] | None = None
    ) -> tuple[np.ndarray, np.ndarray, str]:
        """Counts and edges of the frame's depth (metres, with a calibration) or disparity (px);
        ``box`` (x0, y0, x1, y1): of that rectangle only."""
        d = result.depth.disparity
        if box is not None:
            x0, y0, x1, y1 = box
            d = d[max(0, y0) : max(0, y1), max(0, x0) : max(0, x1)]
        if result.calibration is not None:
            return (*measure.histogram(result.calibration.depth_m(d), bins), "m")
        return (*measure.histogram(d, bins), "px")

    def start_recording(self, shown: StereoPair | None = None) -> Recorder:
        """Record the source into a new folder under ``output_root/recordings``: every captured
        frame at the source's rate (a camera's capture thread writes them, frames the depth
        engine skips included; other sources are written as they are read). ``shown``: the frame
        on screen of a source paused there, written first (recording from a paused first frame
        began at the second: review)."""
        self.stop_recording()
        describe = getattr(self.source, "describe", None)
        recorder = Recorder(
            snapshots.new_folder(self.output_root, "recordings"),
            self.calibration,
            source=describe() if callable(describe) else "",  # session.json says what was recorded
            rig=self._recorded_rig(shown),
        )
        recorder.keep_times_of(self.source)  # as `record` keeps them
        hook = getattr(self.source, "add_capture_listener", None)
        self._recorder_on_capture = hook is not None
        self._failed_recording = None
        # a camera's frames queue to a writer thread: its capture thread never waits on the disk,
        # and frames that find the queue full are counted (a camera driver drops them unsaid)
        live = hook is not None and getattr(self.source, "live", False)
        self._writer = QueuedWriter(recorder, max_bytes=LIVE_QUEUE_BYTES) if live else None
        self.recorder = recorder
        if hook is not None:
            hook(self._record_captured)
        elif shown is not None:
            self._record(recorder, shown)
        return recorder

    def _recorded_rig(self, shown: StereoPair | None) -> StereoRig | None:
        """The raw rig the source's frames are rectified with here, kept with a recording of them
        (raw frames and the rectified geometry alone played back unrectified: review); None when
        frames of another size set it aside, or the source rectifies its own."""
        rig = getattr(self.rectifier, "rig", None)
        if rig is None or getattr(self.source, "rectifies_frames", False):
            return None
        frame = shown if shown is not None else self._grabbed[0]
        if frame is not None and frame.left.shape[:2] != rig.image_size[::-1]:
            return None
        return rig

    def _record_captured(self, pair: StereoPair) -> None:
        writer, recorder = self._writer, self.recorder
        if writer is not None:
            writer.offer(pair)
        elif recorder is not None:
            self._record(recorder, pair)

    def _record(self, recorder: Recorder, pair: StereoPair) -> None:
        """Write one pair; a write error (a full disk) stops the recording, never the source, and
        is kept for the window to say with what the recording kept (``take_failed_recording``)."""
        try:
            recorder.write(pair)
        except (UserError, OSError) as exc:
            self._fail_recording(recorder, str(exc))

    def _fail_recording(self, recorder: Recorder, error: str) -> None:
        with self._recording_lock:
            if self.recorder is not recorder:  # stopped meanwhile: the write found it closed
                return
            self.recorder = None
            writer, self._writer = self._writer, None
        self._unhook_recorder()
        if writer is not None:
            writer.close()  # its queue was emptied by the error
            self.stopped_writer = writer
        recorder.discard()  # what it wrote stays; an empty one goes
        self._failed_recording = (recorder, error)

    def _set_aside_calibration(
        self, size: tuple[int, int] | None, shape: tuple[int, ...], own: bool = False
    ) -> None:
        """The calibration in use fits frames of another size (a new source of another camera),
        or (``size`` None) the new source carries its own: it is set aside, not left to refuse
        every frame or to rectify another rig's; ``take_set_aside`` says so once. ``own``: the
        source carries its own calibration, which depth then uses (not pixels)."""
        then = (
            "depth uses the source's own calibration"
            if own
            else "depth in pixels; load this camera's calibration"
        )
        why = (
            "this source carries its own calibration, so the one in use is set aside"
            if size is None
            else f"the calibration in use is for {size[0]}x{size[1]} frames but this source's are "
            f"{shape[1]}x{shape[0]}: it is set aside"
        )
        with self._lock:
            self.calibration, self.rectifier, self._calibration_size = None, None, None
            self._new_stream()
            self._set_aside = f"{why} ({then})"
        self.events.calibration_changed.emit(None)

    def cut_short_note(self) -> str | None:
        """The ended source's note that its file was cut short (a video), or None."""
        return next((n for n in getattr(self.source, "notes", ()) if CUT_SHORT_WORDS in n), None)

    def take_set_aside(self) -> str | None:
        """Why the calibration was set aside (once), or None."""
        message, self._set_aside = self._set_aside, None
        return message

    def take_failed_recording(self) -> tuple[Recorder, str] | None:
        """The recording a write error stopped and the error's text (once), or None."""
        writer = self._writer
        if writer is not None and writer.error is not None:  # the writer thread's (a full disk)
            self._fail_recording(writer.recorder, str(writer.error))
        failed, self._failed_recording = self._failed_recording, None
        return failed

    def _unhook_recorder(self) -> None:
        unhook = getattr(self.source, "remove_capture_listener", None)
        if unhook is not None:
            unhook(self._record_captured)

    def take_ended_recording(self) -> Recorder | None:
        """The recording that a change of source finished (once), or None."""
        recorder, self._ended_recording = self._ended_recording, None
        return recorder

    def stop_recording(self, wait: bool = False) -> Recorder | None:
        """Finish the recording; the recorder, or None when none ran. A camera's frames still
        queued are written on a thread of their own (``wait``: before returning), which the
        process waits for at exit; ``stopped_writer`` has the counts they end with."""
        with self._recording_lock:
            recorder, self.recorder = self.recorder, None
            writer, self._writer = self._writer, None
        if recorder is None:
            return None
        self._unhook_recorder()
        self.stopped_writer = writer
        describe = getattr(self.source, "describe", None)
        if describe is not None:  # a mono video's note goes with its recording
            recorder.set_source(describe(), list(getattr(self.source, "notes", ())))

        def finish() -> None:
            if writer is not None:
                writer.close()
            # none written (Record pressed after a video ended): an empty recording would only
            # clutter the folder and play as no frames
            recorder.discard()

        if writer is None or wait or not writer.pending:
            finish()
        else:
            threading.Thread(target=finish, name="bi3d-record-finish").start()
        return recorder

    # ---- frames (worker thread) ------------------------------------------------------
    def grab(self) -> tuple[StereoPair | None, float]:
        """The newest pair from the source (None when it has ended) and the capture time in ms."""
        source = self.source
        if source is None:
            return None, 0.0
        t0 = time.perf_counter()
        latest: Callable[[], StereoPair | None] | None = getattr(source, "latest", None)
        pair = latest() if latest is not None else source.read()
        # a file's frame number, for flow between neighbours only (a camera's frames are the
        # newest, and skipping some of them is how it keeps up: None)
        numbered = getattr(source, "seekable", False)
        self._grabbed = (pair, getattr(source, "frame_number", None) if numbered else None)
        if pair is None:
            self.events.source_ended.emit()
        waited = 0.0
        if pair is not None:
            if self._paced(source):  # a file plays at its own rate, not as fast as depth allows
                t_wait = time.perf_counter()
                self._pace.wait(float(pair.timestamp))
                waited = time.perf_counter() - t_wait  # not the capture's time (the latency plot's)
            if (recorder := self.recorder) is not None and not self._recorder_on_capture:
                self._record(recorder, pair)
        return pair, (time.perf_counter() - t0 - waited) * 1000

    @staticmethod
    def _paced(source: FrameSource) -> bool:
        """Whether the window plays ``source`` no faster than its timestamps: a video or a recording
        (a 15 fps video played at 1.29 x real time where depth took 32 ms: review); not a camera
        (its own clock), a folder of pairs or a recording of one (frame numbers, not times)."""
        return (
            bool(getattr(source, "seekable", False))
            and bool(getattr(source, "has_times", False))
            and not getattr(source, "frame_number_times", False)
        )

    def process(
        self,
        pair: StereoPair,
        request: DepthRequest,
        generation: int = 0,
        capture_ms: float = 0.0,
        preview: bool = False,
    ) -> FrameResult:
        """Rectify, compute depth (and the baseline, and flow), and time every stage. ``preview``:
        a quick stand-in for the answer that follows (the engine leaves its once-a-stream choices,
        as the colour choice, to that one)."""
        with self._lock:
            engine, baseline, flow = self.engine, self.baseline, self.flow
            rectifier, calibration = self.rectifier, self.calibration or pair.calibration
            fitted = self._calibration_size  # None without a calibration of a rectified pair
            swap = self.swap_views
            # a calibration set under an earlier source, not one given for this source (gui
            # --calib, loaded before the source opened: code review)
            fresh, self._fresh = self._fresh, False
            fresh = fresh and self._calibrated_on is not self.source
        timings = {"capture": capture_ms}
        raw = pair
        t0 = time.perf_counter()
        left, right = pair.left, pair.right
        if rectifier is not None and getattr(self.source, "rectifies_frames", False):
            # a raw rig's recording, rectified with its own rig as it is read: not twice
            rectifier, calibration = None, pair.calibration
        elif fresh and pair.calibration is not None and self.calibration is not None:
            # a new source with its own calibration (the synthetic scene, a dataset's calib.txt):
            # a board calibration of another rig warped its frames into noise (review); one loaded
            # while the source plays is the user's choice, and is used
            self._set_aside_calibration(None, left.shape, own=True)
            rectifier, calibration, fitted = None, pair.calibration, None  # set aside once (code review)
        # the frames the calibration in use fits: a loaded rig's, or a rectified pair's fitted size
        size = getattr(rectifier, "image_size", None) if rectifier is not None else fitted
        if size is not None and tuple(size) != (left.shape[1], left.shape[0]):  # another source's frames
            self._set_aside_calibration(tuple(size), left.shape, own=pair.calibration is not None)
            rectifier, calibration = None, pair.calibration
        if rectifier is not None:
            left, right = rectifier.rectify(left, right)
        if swap:
            left, right = right, left
        if rectifier is not None or swap:
            pair = dataclasses.replace(pair, left=left, right=right)
        timings["rectify"] = (time.perf_counter() - t0) * 1000
        request = with_calibration(request, calibration)
        if hasattr(engine, "preview"):
            engine.preview = preview
        try:
            depth = engine.compute(left, right, request)
        finally:
            if hasattr(engine, "preview"):
                engine.preview = False
        source_notes = getattr(self.source, "notes", ())  # e.g. a video opened in the other layout
        depth.notes[:0] = [n for n in source_notes if n not in depth.notes]
        if depth_is_noise(source_notes):  # split the wrong way, or mono: no range to raise
            drop_ceiling_notes(depth)
        for stage in ("features", "planes"):
            timings[stage] = depth.timings.get(stage, 0.0)
        timings["depth_total"] = depth.timings.get("total", 0.0)
        if engine.name == "sgbm":
            timings["features"] = depth.timings.get("match", 0.0)
        # everything else the engine did (upsampling, readout, sub-pixel matching, agreement, the
        # plane check, the range estimate): the plot's stages add up to the time the controls show
        # ("took"; the held-frame title had summed only the stages above and read 30-80 ms less)
        listed = timings["features"] + timings["planes"]
        after = sum(depth.timings.get(s, 0.0) for s in AFTER_PLANES)
        timings["refine"] = max(after, timings["depth_total"] - listed)
        timings["rectify"] += depth.timings.get("align", 0.0)  # the engine's vertical alignment
        t_base = time.perf_counter()
        base = (
            baseline.compute(left, right, alike(request, depth, left.shape[1]))
            if baseline is not None
            else None
        )
        if base is not None:  # SGBM beside Bi3D: its own stage (the budget is Bi3D's alone)
            timings["sgbm"] = (time.perf_counter() - t_base) * 1000
        flow_field = None
        t1 = time.perf_counter()
        if pair is self._flow_of[0]:  # the same frame again (a setting changed): its flow stands
            flow_field = self._flow_of[1]  # (computed again, it was the frame against itself)
            before = self._flow_of[2]
            if flow is not None and flow_field is None and before is not None:
                # another method, or flow turned on, on a held frame: from the frame before it
                flow_field = np.asarray(flow.compute(before, left))
                self._flow_of = (pair, flow_field, before)
        else:  # a new frame: the frame before it is kept with flow off too (turned on at the end
            # of a folder, it had none to compare with: review)
            number = self._grabbed[1] if self._grabbed[0] is pair else None
            previous = self._previous_left
            # a file's frames: only the one just before (a seek back, a loop or a skipped
            # damaged frame showed flow between frames 9 and 2, 22 px where steps were 2-6)
            last = self._previous_number
            follows = number is None or last is None or number == last + 1
            before = previous if previous is not None and previous.shape == left.shape and follows else None
            if flow is not None and before is not None:
                flow_field = np.asarray(flow.compute(before, left))
            self._previous_left, self._previous_number = left, number
            self._flow_of = (pair, flow_field, before)
        timings["flow"] = (time.perf_counter() - t1) * 1000
        self._frames += 1
        result = FrameResult(
            self._frames, generation, pair, request, depth, base, flow_field, calibration, timings,
            self.engine_reason, raw=raw,
        )  # fmt: skip
        self.events.result.emit(result)
        return result

    def close(self) -> None:
        self.stop_recording(wait=True)
        with self._lock:
            source, self.source = self.source, None
        if source is not None:
            source.close()


def with_calibration(request: DepthRequest, calibration: Calibration | None) -> DepthRequest:
    """The request answered with the frame's own calibration (``calibration``: the session's,
    else the frame's, else None), whatever the window's request carried: a request made while
    the last source played kept its calibration, and a snapshot of the next source's frames
    saved their depth in metres by it (the demo's f * B for a synthetic scene's: review).
    Without one, levels spaced in depth fall back to disparity, as the controls do."""
    if request.calibration is calibration:
        return request
    if calibration is None and request.spacing is Spacing.DEPTH:
        return dataclasses.replace(request, calibration=None, spacing=Spacing.DISPARITY)
    return dataclasses.replace(request, calibration=calibration)


def alike(request: DepthRequest, depth: DepthResult, width: int) -> DepthRequest:
    """The request for SGBM beside Bi3D: the planes Bi3D's budget chose where it answered
    quantized depth (its own fewer levels, or the fallback of continuous depth), so that the two
    panes and their errors compare like for like (SGBM drew 8 levels beside Bi3D's 4, and the
    Errors tab compared them: review); else the request as it is. Planes past what SGBM can
    search in a pair ``width`` px wide are left to its own narrowing (given as planes, they were
    refused and the whole frame with them)."""
    if not depth.choice.get("quantized") and not (depth.choice and request.mode is Mode.QUANTIZED):
        return request
    planes = tuple(float(p) for p in depth.planes)
    if not planes or max(planes) > widest_search(width):
        return request
    return dataclasses.replace(request, mode=Mode.QUANTIZED, planes=planes, levels=None, budget_ms=None)


ERROR_SIDE_PX = 8.0  # how a pixel on the wrong side of a plane or range shows in the error map


def _binary_truth(answer: DepthResult, gt: np.ndarray) -> TruthError:
    """A binary answer against the truth: each pixel with ground truth on the right side of the
    plane (unanswered counts as wrong), the map 0 where right, ``ERROR_SIDE_PX`` where wrong."""
    plane = float(answer.planes[0])
    known = np.isfinite(gt) & (gt > 0)
    p = answer.probabilities[0]
    with np.errstate(invalid="ignore"):
        right = np.isfinite(p) & ((p > 0.5) == (gt > plane))
    error = np.where(known, np.where(right, 0.0, ERROR_SIDE_PX), np.nan).astype(np.float32)
    side = float(right[known].mean())
    return TruthError(answer.engine, error, float("nan"), float("nan"), side, f"{plane:g} px", Mode.BINARY)


def _quantized_truth(answer: DepthResult, gt: np.ndarray, edges: np.ndarray) -> TruthError:
    """A quantized answer against the truth: each pixel with ground truth in the level it was
    answered in (between its ``edges``, ``level_edges``; unanswered counts as wrong), the map how
    far the truth lies outside that level (0 inside). Dense bad-2 of the levels' middles read 64 %
    wrong of an answer of 8 levels 10 px apart (review); bad-2 and EPE stay beside. The nearest
    level is open towards nearer, as the farthest is towards farther: "nearer than its plane"."""
    known = np.isfinite(gt) & (gt > 0)
    d = answer.disparity
    answered = np.isfinite(d)
    level = np.clip(np.searchsorted(edges, np.where(answered, d, 0.0), side="right") - 1, 0, len(edges) - 2)
    upper = np.append(edges[1:-1], np.inf)  # each level's upper edge, the nearest one's open
    with np.errstate(invalid="ignore"):
        outside = np.maximum(np.maximum(edges[level] - gt, gt - upper[level]), 0.0)
    right = known & answered & (outside == 0)
    error = np.where(answered, outside, ERROR_SIDE_PX).astype(np.float32)
    error[~known] = np.nan
    scores = evaluate(d, gt)["dense"]
    side = float(right[known].mean())
    return TruthError(
        answer.engine, error, scores.bad2, scores.epe, side, f"{len(edges) - 1} levels", Mode.QUANTIZED
    )


def _selective_truth(answer: DepthResult, gt: np.ndarray, span: tuple[float, float]) -> TruthError:
    """A selective answer against the truth: each pixel with ground truth on the right side of
    the range (farther, inside, closer; unknown counts as wrong), and inside it |d - truth| with
    dense bad-2 and EPE over the truth inside the range."""
    lo, hi = span
    known = np.isfinite(gt) & (gt > 0)
    truth_side = np.where(gt < lo, -1, np.where(gt > hi, 1, 0))
    state = answer.range_state
    assert state is not None
    inside = known & (truth_side == 0)
    answered = np.isfinite(answer.disparity) | (state != 0)
    right = known & answered & (state == truth_side)
    with np.errstate(invalid="ignore"):
        error = np.where(right, 0.0, ERROR_SIDE_PX).astype(np.float32)
        error[inside & (state == 0)] = np.abs(answer.disparity - gt)[inside & (state == 0)]
    error[~known] = np.nan
    within = np.where(inside, gt, np.nan)  # the truth inside the range alone
    scores = evaluate(answer.disparity, within)["dense"] if inside.any() else None
    side = float(right[known].mean())
    bad2, epe = (scores.bad2, scores.epe) if scores is not None else (float("nan"), float("nan"))
    return TruthError(answer.engine, error, bad2, epe, side, f"{lo:g}-{hi:g} px", Mode.SELECTIVE)


def range_side(
    result: FrameResult, depth: DepthResult, x: int, y: int
) -> tuple[str, float, float | None] | None:
    """For a pixel of ``depth`` outside its selective range: "closer" or "farther", the range's
    edge on that side (px) and that edge's depth (m; None without a calibration or at infinity);
    None for a pixel inside, unknown, or of another mode."""
    state, span = depth.range_state, result.request.range
    if state is None or span is None or not (0 <= y < state.shape[0] and 0 <= x < state.shape[1]):
        return None
    if state[y, x] == 0:
        return None
    side, edge = ("closer", float(span[1])) if state[y, x] > 0 else ("farther", float(span[0]))
    z = None
    if result.calibration is not None:
        z = float(result.calibration.depth_m(np.array([edge], np.float32))[0])
    return side, edge, z if z is not None and np.isfinite(z) else None


def outside_range_refusal(result: FrameResult, *pixels: tuple[int, int]) -> None:
    """A ``UserError`` for a pixel outside a selective answer's range: its side is known, its
    depth is not (it said "pixel (100, 100) has no depth; pick a pixel with a colour": review)."""
    for x, y in pixels:
        found = range_side(result, result.depth, x, y)
        if found is None:
            continue
        side, _, z = found
        unit = result.calibration.depth_unit if result.calibration is not None else ""
        metres = f" ({side} than {z:.2f} {unit})" if z is not None else ""
        raise UserError(
            f"pixel ({x}, {y}) is {side} than the range{metres}: selective depth has no distance "
            "there; pick a pixel inside the range, or widen it"
        )
