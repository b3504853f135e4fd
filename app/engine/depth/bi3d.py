"""Bi3D depth engine: a ``DepthRequest`` and an image pair in, a ``DepthResult`` out.

Features are computed once per frame; planes go through SegNet in memory-bounded
chunks. Both passes, and the readout stages, run through a runtime (``app.engine.runtimes``:
torch, ONNX Runtime or TensorRT); a runtime that fails on a frame hands the frame to the
next one. Planes that are not multiples of 3 px are rounded to the nearest multiple
of 3 (as published) with ``shift_mode="round"``, or answered at the plane asked for with
``shift_mode="interpolate"``, which blends the right features between the two neighbouring
feature columns. ``"auto"`` (the default) interpolates for models that answer such planes
well (``SweepModel.exact_planes``: the light model) and rounds for the published ones.
Matching stages follow the network where it is imprecise: the sub-pixel refinement of the
continuous and selective readouts (``bi3d.subpixel``) and, for the light model, the plane
check of hesitant binary and quantized answers (``bi3d.planecheck``).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from app.engine.bi3d.int8 import int8_unavailable
from app.engine.bi3d.light import convex_upsample
from app.engine.bi3d.model import FEATURE_STRIDE, ModelKind, SweepModel
from app.engine.bi3d.padding import Padder
from app.engine.depth.agreement import (
    DEFAULT_AGREEMENT,
    AgreementConfig,
    curve_confidence,
    plane_confidence,
)
from app.engine.depth.alignment import VerticalAligner, with_alignment
from app.engine.depth.border import border_guesses, leave_unknown
from app.engine.depth.budget import CostModel, check_budget
from app.engine.depth.colour_choice import ColourChoice, is_colour
from app.engine.depth.decoding import (
    BEYOND_NOTE_SHARE,
    beyond_text,
    continuous_range,
    dense_span,
    edge_planes,
    hold_far_planes,
    quantized_disparity,
    quantized_step,
    range_state,
    requested_planes,
)
from app.engine.depth.exposure import (
    DEFAULT_EXPOSURE,
    ExposureConfig,
    TintHold,
    as_grey,
    flat_answer,
    gain_matched,
    pair_histogram,
    pair_notes,
    stretch,
    white_balanced,
)
from app.engine.depth.limits import bi3d_bytes, check_image_size, require_frame
from app.engine.depth.planecheck import DEFAULT_PLANE_CHECK, PlaneCheckConfig, check_planes
from app.engine.depth.readout import (
    DeferredRecord,
    feats_guide,
    host_array,
    integrate_planes,
    normalized_to_disparity,
    step_fit,
    upsampled_step_fit,
)
from app.engine.depth.scene_range import (
    AUTO_RANGE_WORDS,
    RangeTracker,
    SceneRange,
    bounded,
    ceiling_note,
    ceiling_remedy,
    closer_than_top,
    widest_search,
)
from app.engine.depth.search import coarse_planes
from app.engine.depth.searched import (
    SEARCHES,
    Strategy,
    can_search,
    match_and_rate,
    search_plan,
    searched_result,
)
from app.engine.depth.strategies import (
    SUBPIXEL_CODES,
    cheapest_ms,
    choose,
    probe_subpixel,
    refuse_below_one_plane,
    shifts_for,
)
from app.engine.depth.subpixel import DEFAULT_SUBPIXEL, SubpixelConfig
from app.engine.errors import Interrupted, UserError, setting
from app.engine.runtimes.base import FrameFeatures, Runtime, RuntimeUnavailable
from app.engine.runtimes.chain import RuntimeChain
from app.engine.runtimes.torch_runtime import TorchRuntime
from app.engine.types import (
    DEFAULT_MIN_CONFIDENCE,
    DEVICES,
    SHIFT_MODES,
    DepthRequest,
    DepthResult,
    Mode,
    check_pair,
)

# int8: the light model's SegNet convolutions in int8, everything else fp32 (bi3d.int8)
PRECISIONS = {
    "fp32": torch.float32,
    "tf32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "int8": torch.float32,
}


def cpu_has_native_bf16(cpuinfo: str | None = None) -> bool:
    """Whether this CPU computes bf16 natively (x86 AVX512-BF16 or AMX, Arm BF16); Linux only.

    Elsewhere bf16 is emulated and slower than fp32, so ``auto`` precision stays fp32."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return False
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            flags = set(value.split())
            return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})
    return False


def resolve_precision(
    precision: str, device: torch.device, model: SweepModel | None = None, runtime: str = "torch"
) -> str:
    """``auto``: bf16 for a model validated in bf16 (``SweepModel.cpu_bf16``: the light model) on
    a CPU with native bf16, through torch (measured there: one plane about 0.7x the fp32
    time with AMX; with AVX512-BF16 alone it can be slower, so ``engines.bi3d_engine`` has the
    runtime chain time it against fp32 on the first frame); fp32 otherwise (published models
    reproduce their references in fp32; ONNX Runtime runs fp32 only). Never int8 (``bi3d.int8``,
    asked for by name): 15 % faster sweeps here, but 0.3 points more bad-2 on the held-out
    synthetic scenes. Other names pass through."""
    if precision != "auto":
        return precision
    bf16 = (
        device.type == "cpu"
        and runtime in ("torch", "auto")
        and model is not None
        and model.cpu_bf16
        and cpu_has_native_bf16()
    )
    return "bf16" if bf16 else "fp32"


def resolve_device(name: str) -> torch.device:
    """``cpu`` or ``cuda`` as a torch device, or a ``UserError`` when it cannot run here."""
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError(f"CUDA is not available on this machine; use {setting('device', 'cpu')}")
    if name not in DEVICES:
        raise UserError(f"unknown {setting('device')} {name!r}; use one of {', '.join(DEVICES)}")
    return torch.device(name)


PREPARE_REPORTED_MS = 5.0  # a runtime set-up this long (opened or chose one): apart from the frame's total
OVER_BUDGET = 1.15  # a frame over this x its budget says so (issue 19's tolerance; the window's too)
DENSE_STAGES = ("subpixel", "readout", "agreement")  # a dense answer's stages that plane answers skip
WIDEN_ABOVE = 0.005  # share of pixels "closer" at an auto bound's last plane that widens the sweep
ONE_LEVEL_SHARE = 0.5  # share of pixels beyond the nearest or farthest quantized level that a note points out
# a light model's binary plane this far or more is held to the one at half of it: on the 16 + 16
# held-out selection scenes it cost 0.1-0.25 points of agreement at 66 and 96 px and gained
# 0.9-5.3 points from 126 px on (benchmarks/RESULTS.md)
SUPPORT_FROM_PX = 108.0


@dataclass
class Plan:
    """Planes to sweep (px) and how to read them out."""

    planes: np.ndarray
    step: int = FEATURE_STRIDE  # dense grid spacing (selective / continuous)
    span: tuple[int, int] | None = None
    notes: list[str] = field(default_factory=list)
    choice: dict[str, float] = field(default_factory=dict)
    # coarse-to-fine search (``depth.search``): px between the coarse planes, 0 for the full sweep
    strategy: Strategy | None = None
    answer: DepthRequest | None = None  # the request answered instead (the budget's quantized fallback)


class Bi3DEngine:
    name = "bi3d"

    def __init__(
        self,
        model: SweepModel,
        device: str = "cpu",
        precision: str = "fp32",
        shift_mode: str = "auto",
        max_chunk_bytes: int | None = None,
        runtime: Runtime | RuntimeChain | None = None,
        subpixel: SubpixelConfig | None = DEFAULT_SUBPIXEL,
        plane_check: PlaneCheckConfig | None = DEFAULT_PLANE_CHECK,
        search: str = "auto",
        agreement: AgreementConfig | None = DEFAULT_AGREEMENT,
        align: bool = True,
        exposure: ExposureConfig | None = DEFAULT_EXPOSURE,
        colour_choice: bool = True,
    ) -> None:
        """``runtime``: a runtime or chain for ``model`` (``runtimes.select.open_runtime``);
        None runs the model eagerly in torch. ``subpixel``: the matching refinement of the
        per-plane readout in the continuous and selective modes (``bi3d.subpixel``); None
        leaves the network's readout as it is. ``plane_check``: the matching check of hesitant
        answers in the binary and quantized modes (``bi3d.planecheck``), for models that declare
        ``plane_check`` (the light model); None leaves the network's probabilities as they are.
        ``search``: how continuous depth finds each pixel's planes (``depth.searched``):
        ``coarse-to-fine`` where the model and runtime offer per-pixel planes (else the full
        sweep, with a note); ``full`` the full sweep, also under a budget; ``auto`` the full
        sweep, and under a budget the search too where the model carries weights trained for its
        per-pixel passes (``LightBi3D.pixel_segnet``: the bundled model does). ``align``: measure
        the pair's vertical misalignment and cancel it before matching (``depth.alignment``).
        ``exposure``: stretch an underexposed pair's contrast before matching (``depth.exposure``);
        None matches the images as they come. ``colour_choice``: read a colour stream in colour or
        in grey levels, whichever its first frame's answers match the images better in
        (``depth.colour_choice``); False reads colour as it comes."""
        self.device = resolve_device(device)
        precision = resolve_precision(precision, self.device, model)
        if precision not in PRECISIONS:
            raise UserError(f"unknown precision {precision!r}; use auto or one of {', '.join(PRECISIONS)}")
        if shift_mode not in SHIFT_MODES:
            raise UserError(f"unknown plane shift mode {shift_mode!r}; use auto, round or interpolate")
        if precision in ("fp16", "tf32") and self.device.type == "cpu":
            raise UserError(f"{precision} needs {setting('device', 'cuda')}; use bf16 or fp32 on the CPU")
        if precision == "int8" and (why := int8_unavailable(model, self.device)):
            raise UserError(f"{setting('precision', 'int8')}: {why}")
        self.model = model.to(self.device).eval()
        if not isinstance(runtime, RuntimeChain):
            runtime = RuntimeChain.of(runtime or TorchRuntime(self.model, self.device, precision))
        self.backend = runtime
        self.precision = precision
        if shift_mode == "auto":
            shift_mode = "interpolate" if model.exact_planes else "round"
        self.shift_mode = shift_mode
        self.subpixel = subpixel
        if search not in SEARCHES:
            raise UserError(f"unknown {setting('search')} {search!r}; use one of {', '.join(SEARCHES)}")
        self.search = search
        self.ranges = RangeTracker()  # --max-disparity auto, frame to frame
        self.aligner = VerticalAligner() if align else None  # frame to frame, too
        self.exposure = exposure
        self.colour = ColourChoice() if colour_choice else None  # colour or grey levels, per stream
        self.tint = TintHold()  # views in colours set apart, frame to frame
        self._grey_network = False  # the network reads the frame's grey levels (``_read``)
        # set by a caller for a quick stand-in answer (the window's preview of a still pair): the
        # colour choice waits for the frame answered in full
        self.preview = False
        # occlusion fill and matching confidence of per-plane classifiers' continuous answers
        self.agreement = agreement
        self.strategy = Strategy()  # the coarse-to-fine search without a budget
        # only for models whose answers were measured to gain from it (SweepModel.plane_check)
        self.plane_check = plane_check if model.plane_check else None
        self.support = True  # far binary planes held to a nearer one (``_support_plane``)
        # Bigger SegNet batches pay off on a GPU. On a CPU the published networks are fastest one
        # plane per call (171 ms/plane at 480x640 one at a time, 200-260 ms in batches of 4-16);
        # the light model in batches of about 16 (65 planes at 480 x 640, same process,
        # alternating: 772 ms in the 2-plane batches of 64 MB, 644 ms in batches of 18)
        if self.device.type == "cuda":
            default = 1 << 30
        else:
            default = (512 << 20) if model.kind is ModelKind.LIGHT else (64 << 20)
        self.max_chunk_bytes = default if max_chunk_bytes is None else max_chunk_bytes
        self.costs = CostModel()
        # set by a caller that may need to stop a long sweep (checked between plane chunks)
        self.interrupt: threading.Event | None = None

    @property
    def runtime(self) -> str:
        """Name of the runtime that runs the next frame (and ran the last)."""
        return self.backend.name

    # ---- public -------------------------------------------------------------------
    def new_stream(self) -> None:
        """``DepthEngine.new_stream``: from the next frame on (the trackers reset themselves in the
        thread that computes)."""
        self.ranges.new_stream()
        if self.aligner is not None:
            self.aligner.new_stream()
        if self.colour is not None:
            self.colour.new_stream()
        self.tint.new_stream()

    def compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
        """Depth for one rectified pair: ``left``, ``right`` H x W x 3 RGB uint8 -> ``DepthResult``
        (disparity H x W px, NaN unknown; probabilities P x H x W of P(disparity > plane)).

        Raises ``UserError`` for a request this model cannot answer, ``Interrupted`` when asked to stop."""
        check_pair(left, right)
        check_image_size(left.shape[0], left.shape[1])
        self._check_request(request)
        right, notes, align_ms = self.aligner.align(left, right) if self.aligner else (right, [], 0.0)
        as_shot = left  # the colour choice reads the camera's balance before any stage changes it
        apart = self.tint.threshold()
        flat, seen, views = pair_notes(left, right, apart)
        self.tint.update(seen)
        notes = [*notes, *seen]
        if self.exposure is not None and flat is None:
            # views exposed apart matched first: the network's first layers see gain (review)
            matched = gain_matched(left, right, views, apart)
            counts = views[0] + views[1]
            if matched[0] is not left or matched[1] is not right:
                left, right = matched
                counts = pair_histogram(left, right)
            left, right, stretched = stretch(left, right, self.exposure, counts)
            notes = [*notes, stretched] if stretched else notes
        elif flat is None:  # without the exposure stage, colours still: the note says so
            left, right = white_balanced(left, right, apart)
        while True:
            try:
                result, read = self._compute_read(left, right, request, flat is None, as_shot)
                notes = [*notes, read] if read and read not in notes else notes
                if flat is not None:  # the network answers something everywhere: none of it is depth
                    flat_answer(result)
                    result.notes.insert(0, flat)
                return with_alignment(result, notes, align_ms)
            except RuntimeUnavailable as exc:  # includes RuntimeFailed: the frame starts again
                if not self.backend.fail(exc):
                    raise UserError(str(exc)) from exc

    def _compute_read(
        self, left: np.ndarray, right: np.ndarray, request: DepthRequest, textured: bool, as_shot: np.ndarray
    ) -> tuple[DepthResult, str | None]:
        """``_compute`` of a colour pair in colour or in grey levels, as the stream's colour choice
        says (``depth.colour_choice``), and the choice's note (None: read as it came). The frame
        that chooses reads the pair twice as a plain continuous request (``request`` itself when
        it is one), the network reading the colours and then their grey levels (``_read``), and
        scores both answers. A stream kept in grey levels is read from the grey images throughout
        (the matching stages too: noise on the colours alone, sigma 10, read Motorcycle at 20.8 %
        with the colours matched and 17.0 % with grey levels), so that frame answers once more;
        so does a frame whose request is not a plain continuous one. ``as_shot``: the left image
        before the exposure stages, whose colour balance says when to choose again. A preview
        (``preview``) reads as the stream reads so far (colour until chosen) and leaves the choice
        to the frame answered in full."""
        choice = self.colour
        if choice is None or not textured or not (is_colour(left) and is_colour(right)):
            return self._compute(left, right, request), None
        if not choice.due(as_shot) or self.preview:
            if choice.grey:
                return self._compute(as_grey(left), as_grey(right), request), choice.note()
            return self._compute(left, right, request), None
        t0 = time.perf_counter()
        plain = request.mode is Mode.CONTINUOUS and request.budget_ms is None
        probe = (
            request
            if plain
            else DepthRequest(
                mode=Mode.CONTINUOUS,
                max_disparity=request.max_disparity,
                auto_range=request.auto_range,
                min_confidence=DEFAULT_MIN_CONFIDENCE,
            )
        )
        # the choice reads as the default engine does, sub-pixel matching on (without it a
        # held-out synthetic scene read 10.8 % in colour and 19.1 % in grey levels chose grey)
        forced, keep = self.subpixel is None, plain and self.subpixel is not None
        # both readings start from the stream's range and costs; the tracker keeps its identity
        # (a new_stream() from another thread marks it stale meanwhile)
        before, costs = self.ranges.state(), copy.deepcopy(self.costs)
        self.subpixel = self.subpixel or DEFAULT_SUBPIXEL
        try:
            read_colour = self._read(left, right, probe, False)
            t_colour = time.perf_counter()
            after_colour, costs_after = self.ranges.state(), copy.deepcopy(self.costs)
            self.ranges.restore(before)
            self.costs = copy.deepcopy(costs)
            read_grey = self._read(left, right, probe, True)
        except BaseException as exc:
            self.ranges.restore(before)
            self.costs = costs
            if not isinstance(exc, UserError):
                raise
            # a probe this frame cannot take (its memory, say): colour, and the request as it is
            # (answered after the engine's own sub-pixel setting is back: not inside this block)
            choice.settle(as_shot)
            read_colour = None
        finally:
            self.subpixel = None if forced else self.subpixel
        if read_colour is None:
            return self._compute(left, right, request), None
        in_grey = choice.choose(left, right, read_colour.disparity, read_grey.disparity, as_shot)
        if keep and not in_grey:  # the colour reading is the answer; the grey one and the scores, the check's
            self.ranges.restore(after_colour)
            self.costs, result = costs_after, read_colour
            check_ms = (time.perf_counter() - t_colour) * 1000
        else:
            self.ranges.restore(before)
            self.costs = costs
            t_answer = time.perf_counter()
            result = self._compute(*((as_grey(left), as_grey(right)) if in_grey else (left, right)), request)
            check_ms = (t_answer - t0) * 1000
        result.timings["colour_check"] = check_ms  # apart, as a new size's probe is: not the frame's cost
        return result, choice.note()

    def _read(self, left: np.ndarray, right: np.ndarray, request: DepthRequest, grey: bool) -> DepthResult:
        """``_compute`` with the network reading the images' colours or their grey levels; the
        stages that match the images (sub-pixel, agreement, plane check) read them as they are, so
        that two readings of one frame differ by the network's input alone."""
        self._grey_network = grey
        try:
            return self._compute(left, right, request)
        finally:
            self._grey_network = False

    def _compute(self, left: np.ndarray, right: np.ndarray, request: DepthRequest) -> DepthResult:
        budget = request.budget_ms
        padder = Padder(left.shape[0], left.shape[1], minimum=self.model.min_size)
        size = padder.padded_size
        ceiling = request.max_disparity
        if request.auto_range:  # widened, the sweep stops where matches can lie: within the image
            ceiling = min(ceiling, widest_search(left.shape[1]))  # (a 64 px pair swept 0-192 px)
        t_range = time.perf_counter()
        found = None
        if self.model.has_disp_refine:  # DispRefine reads the area under the whole trained range
            request = dataclasses.replace(request, auto_range=False)
        else:
            request, found = bounded(request, self.ranges, left, right)
        range_ms = (time.perf_counter() - t_range) * 1000
        self._check_memory(request, size)  # before the runtimes are opened and timed at this size
        t0 = time.perf_counter()
        probe_ms = 0.0
        with torch.inference_mode():
            layout = self.model.channels_last_input
            seen = (as_grey(left), as_grey(right)) if self._grey_network else (left, right)
            l_in, r_in = padder.network_pair(*seen, self.device, layout)
            t_prepare = time.perf_counter()
            self.backend.prepare(l_in, r_in)
            # a new size's runtime choice times the candidates (400 ms at 480 x 600 here): not the
            # frame's cost (the budget's first estimate of one plane read 527 ms, 30 ms measured)
            prepare_ms = (time.perf_counter() - t_prepare) * 1000
            with self.backend.context():
                if request.budget_ms is not None and not self.costs.known(size):
                    t_probe = time.perf_counter()
                    self._probe_costs(l_in, r_in, size)
                    dense = request.mode in (Mode.CONTINUOUS, Mode.SELECTIVE)
                    if dense and self._subpixel_runs():
                        self.costs.costs[size].subpixel_ms.update(probe_subpixel(left, right, self.subpixel))
                    if dense and not self.model.has_disp_refine:
                        unmatched = Strategy(coarse_step=0, subpixel="off")
                        self._probe_dense(request, l_in, r_in, padder, (left, right), unmatched)
                        if request.mode is Mode.CONTINUOUS and self._search_ready():
                            searched = Strategy(subpixel="off")
                            self._probe_dense(request, l_in, r_in, padder, (left, right), searched)
                    # from the probe's start: the runtime's set-up before it is taken out apart
                    # (from t0 it was taken out twice: "took -343 ms" after a new size's pair)
                    probe_ms = (time.perf_counter() - t_probe) * 1000
                plan = self._plan(request, size)
                if plan.answer is not None:  # the budget's quantized fallback
                    request = plan.answer
                timings: dict[str, float] = {}
                with self._timed(timings, "features"):
                    feats = self.backend.features(l_in, r_in)
                with self._timed(timings, "planes"):
                    lowres = self._sweep(feats, self._shifts(plan.planes), self._chunk(size))
                if found is not None:
                    timings["range"] = range_ms
                    widened = self._widen(request, plan, feats, lowres, padder, ceiling, timings)
                    request, plan, lowres = widened
                result = self._readout(request, plan, feats, lowres, padder, timings, (left, right))
                count = self._answer_notes(request, found, ceiling, left.shape[1])
                result.answer_notes = count(result)
                result.answer_notes_after = result.notes[-1] if result.notes else None
                result.notes.extend(result.answer_notes)
                result.recount_notes = count
        # the probe of a new size is reported apart: the cost model learns the frame's own time
        set_up_runtime = prepare_ms > PREPARE_REPORTED_MS
        timings["total"] = (
            (time.perf_counter() - t0) * 1000 - probe_ms - (prepare_ms if set_up_runtime else 0.0)
        )
        self._record_costs(size, request, plan, timings)
        if probe_ms:
            timings["probe"] = probe_ms
        if set_up_runtime:
            timings["runtime_setup"] = prepare_ms
        result.timings = timings
        reason = self.backend.reason
        result.notes = (
            plan.notes + result.notes + ([f"runtime {self.backend.name}: {reason}"] if reason else [])
        )
        if result.answer_notes_after is None and plan.notes:  # where answer notes go (recounted)
            result.answer_notes_after = plan.notes[-1]
        result.choice = plan.choice
        if found is not None:
            result.searched = (0.0, float(request.max_disparity))
            result.notes.insert(
                0,
                found.note
                if found.bound == request.max_disparity
                else (
                    f"{AUTO_RANGE_WORDS}0-{request.max_disparity} px (the estimate, {found.bound} px, "
                    "cut off pixels nearer than it: swept to the ceiling)"
                ),
            )
            if result.answer_notes_after is None:
                result.answer_notes_after = result.notes[0]
        result.runtime_choice = self.backend.choice_source
        if plan.choice:  # chosen under a budget
            result.choice["took_ms"] = timings["total"]
            if budget is not None and timings["total"] > OVER_BUDGET * budget:  # it was unsaid (review)
                predicted = plan.choice.get("predicted_ms", 0.0)
                why = (
                    # "cheapest" read against the cheapest selective depth said beside it (review)
                    f"the coarsest answer here was predicted at {predicted:.0f} ms"
                    if predicted > OVER_BUDGET * budget and probe_ms == 0.0
                    # every frame of a selective stream said the costs were still being measured
                    else "this frame size's costs were still being measured (a stream's next frames "
                    "fit better)"
                )
                result.notes.append(f"took {timings['total']:.0f} ms, over the {budget:g} ms budget: {why}")
        return result

    def _record_costs(
        self, size: tuple[int, int], request: DepthRequest, plan: Plan, t: dict[str, float]
    ) -> None:
        """Feed the frame's stage times to the cost model, by the kind of frame it was."""
        n = len(plan.planes)
        sub = None
        if "subpixel" in t:  # its cost per correlated shift, by kind
            step, radius = (plan.strategy.step, plan.strategy.radius) if plan.strategy else (plan.step, None)
            shifts = shifts_for(self.subpixel or DEFAULT_SUBPIXEL, step, radius)
            sub = (plan.strategy.subpixel if plan.strategy else "colour", t["subpixel"] / shifts)
        if not self.costs.known(size) or request.mode in (Mode.BINARY, Mode.QUANTIZED):
            per_plane = t["planes"] + t.get("check", 0.0)  # the check's cost grows with the planes
            if "support" in t:  # a far plane's support: one more plane, with its refine and check
                per_plane, n = per_plane + t["support"], n + 1
            # a dense frame seeds the plane answers' fixed part without its own stages
            plane_answer = request.mode in (Mode.BINARY, Mode.QUANTIZED)
            dense_only = 0.0 if plane_answer else sum(t.get(k, 0.0) for k in DENSE_STAGES)
            self.costs.update(size, t["total"] - per_plane - dense_only, per_plane, n, seed=not plane_answer)
            if request.mode in (Mode.BINARY, Mode.QUANTIZED):
                return
        scaled = t["planes"] + t.get("refine", 0.0) + t.get("readout", 0.0)
        base = t["total"] - scaled - t.get("subpixel", 0.0)
        if plan.strategy is not None and plan.strategy.coarse_step:
            passes = (plan.strategy.passes, t.get("search", 0.0))
            base = t["total"] - t["planes"] - passes[1] - t.get("subpixel", 0.0)
            self.costs.update_search(size, base, (n, t["planes"]), passes, sub)
        elif request.mode in (Mode.CONTINUOUS, Mode.SELECTIVE):
            # a far range's support plane is selective's own: continuous plans on the rest
            self.costs.update_dense(size, base - t.get("support", 0.0), (n, scaled), sub)

    def _widen(
        self,
        request: DepthRequest,
        plan: Plan,
        feats: FrameFeatures,
        lowres: Tensor,
        padder: Padder,
        ceiling: int,
        timings: dict[str, float],
    ) -> tuple[DepthRequest, Plan, Tensor]:
        """``--max-disparity auto``: when more than a trace of pixels is still "closer" at the
        bound's last plane, sweep the planes up to the ceiling as well (the estimate missed
        something near) and keep the wider bound for the next frames."""
        size = padder.padded_size
        if request.max_disparity >= ceiling:
            return request, plan, lowres
        if closer_than_top(lowres, size, (padder.top, padder.left), float(plan.planes[-1])) <= WIDEN_ABOVE:
            return request, plan, lowres
        wider = dataclasses.replace(request, max_disparity=ceiling)
        more = self._plan(wider, size)
        if plan.strategy is not None and plan.strategy.coarse_step and more.strategy == plan.strategy:
            # the search's coarse planes: sweep those of the wider range it lacks, in order
            new = np.setdiff1d(more.planes, plan.planes)
            with self._timed(timings, "planes"):
                extra = self._sweep(feats, self._shifts(new), self._chunk(size))
            union = np.concatenate([plan.planes, new])
            order = np.argsort(union, kind="stable")
            self.ranges.grow(ceiling)
            merged = torch.cat([lowres, extra], dim=1)[:, torch.as_tensor(order)]
            # the bound's own last plane stays among them (it is off the wider range's grid)
            return wider, dataclasses.replace(more, planes=union[order]), merged
        n = len(plan.planes)
        grid = len(more.planes) > n and np.allclose(more.planes[:n], plan.planes)
        if plan.strategy is not None or not grid:
            return request, plan, lowres  # a budget's or a 3D regulariser's grid: keep the bound
        with self._timed(timings, "planes"):
            extra = self._sweep(feats, self._shifts(more.planes[n:]), self._chunk(size))
        self.ranges.grow(ceiling)
        return wider, more, torch.cat([lowres, extra], dim=1)

    def _subpixel_runs(self) -> bool:
        return self.subpixel is not None and not self.model.has_disp_refine

    # ---- planning -----------------------------------------------------------------
    def _check_request(self, request: DepthRequest) -> None:
        check_budget(request.budget_ms)
        top = self.model.max_disparity
        if request.max_disparity > top:
            raise UserError(
                f"this model reaches {top} px of disparity, the request asks for {request.max_disparity}; "
                f"use {setting('max_disparity', top)} on the images at half size (disparities halve "
                f"with them), or {setting('engine', 'sgbm')}, or a model trained for more"
            )

    def _check_memory(self, request: DepthRequest, size: tuple[int, int]) -> None:
        """Refuse a frame that would not fit, with the figure, before anything runs at its size.
        A budget coarsens the dense grid; in quantized mode it may take up to every feature column."""
        planes = len(self._plan(dataclasses.replace(request, budget_ms=None), size).planes)
        if request.budget_ms is not None and request.mode is Mode.QUANTIZED:
            planes = max(planes, request.levels or len(request.planes) or self.model.max_shift - 1)
        require_frame(bi3d_bytes(size, planes, self.model.widest_channels), planes, size, "Bi3D", padded=True)

    def _plan(self, request: DepthRequest, size: tuple[int, int]) -> Plan:
        if request.mode in (Mode.BINARY, Mode.QUANTIZED):
            return self._plan_planes(request, size)
        return self._plan_dense(request, size)

    def _plan_planes(self, request: DepthRequest, size: tuple[int, int]) -> Plan:
        planes = requested_planes(request)
        plan = Plan(planes)
        if request.budget_ms is not None and request.mode is Mode.QUANTIZED:
            # at most one plane per feature column strictly inside (0, max)
            limit = request.levels or len(request.planes) or self.model.max_shift - 1
            # refused as continuous depth is (it answered one flat level "over the 5 ms budget")
            refuse_below_one_plane(self.costs, size, request.budget_ms)
            n = self.costs.max_planes(size, request.budget_ms, limit)
            if not request.planes:
                planes = requested_planes(dataclasses.replace(request, levels=n, budget_ms=None))
            elif n < len(planes):
                # the ends and what fits between them, or the middle one alone (it kept the lowest,
                # 10 of 10-50 px, unsaid: the whole demo read one depth, review)
                keep = np.linspace(0, len(planes) - 1, n).round().astype(int) if n > 1 else [len(planes) // 2]
                kept = planes[keep]
                plan.notes.append(
                    f"budget {request.budget_ms:g} ms kept {len(kept)} of the {len(planes)} planes asked "
                    f"({', '.join(f'{p:g}' for p in kept)} px)"
                )
                planes = kept
            plan.planes = planes
            plan.choice = {"planes": float(len(planes)), "predicted_ms": self.costs.predict_ms(size, n)}
        if self.shift_mode == "round":
            rounded = np.round(plan.planes / FEATURE_STRIDE) * FEATURE_STRIDE
            if not np.allclose(rounded, plan.planes):
                plan.notes.append(
                    "planes rounded to multiples of 3 px (published Bi3D): "
                    + ", ".join(f"{a:g}->{b:g}" for a, b in zip(plan.planes, rounded, strict=True) if a != b)
                )
            plan.planes = np.unique(rounded)
        if plan.choice:
            plan.choice["planes"] = float(len(plan.planes))
        return plan

    def _plan_dense(self, request: DepthRequest, size: tuple[int, int]) -> Plan:
        searched = self._plan_search(request)
        if searched is not None:
            return searched
        lo, hi = continuous_range(request)
        top = self.model.max_disparity
        step = FEATURE_STRIDE
        if request.budget_ms is not None and request.mode is Mode.CONTINUOUS:
            return self._plan_budget(request, size)
        if request.budget_ms is not None and not self.model.has_disp_refine:
            return self._plan_selective_budget(request, size)
        notes: list[str] = []
        # asked only when the search was asked for: the question opens a runtime, which the
        # memory check (before any runtime is chosen) must not do
        why = can_search(self.model, self.backend) if self._searches() else ""
        if why and request.mode is Mode.CONTINUOUS:
            notes.append(f"full sweep: {why}")
        choice: dict[str, float] = {}
        if request.budget_ms is not None:
            step = self.costs.finest_step(size, request.budget_ms, lo, hi, FEATURE_STRIDE, top)
        first, last = dense_span(lo, hi, step, top)
        if self.model.refinenet3d is not None and step == FEATURE_STRIDE:
            first, last = self._fit_3d(first, last, top, notes)
        elif self.model.refinenet3d is not None:
            notes.append("3D regulariser skipped: plane step above 3 px")
        planes = np.arange(first, last + 1, step, dtype=np.float64)
        if request.budget_ms is not None:
            choice = {
                "planes": float(len(planes)),
                "step_px": float(step),
                "predicted_ms": self.costs.predict_ms(size, len(planes)),
            }
        return Plan(planes, step, (first, last), notes, choice)

    def _plan_budget(self, request: DepthRequest, size: tuple[int, int]) -> Plan:
        """Continuous depth under a budget (``depth.strategies``): the most accurate strategy that
        fits, or the quantized answer that fits, with a note saying so."""
        assert request.budget_ms is not None
        budget, top = request.budget_ms, self.model.max_disparity
        span = continuous_range(request)
        config = self.subpixel or DEFAULT_SUBPIXEL
        search = self._search_ready()
        chosen = choose(
            self.costs,
            size,
            budget,
            span,
            top,
            self._subpixel_runs(),
            self.model.max_shift - 1,
            config,
            search,
        )
        choice = {"predicted_ms": chosen.predicted_ms, "planes": float(chosen.planes), "budget_ms": budget}
        if chosen.strategy is None:
            cheapest = cheapest_ms(self.costs, size, span, top, self._subpixel_runs(), config, search)
            answer = DepthRequest(
                mode=Mode.QUANTIZED, levels=chosen.levels, max_disparity=request.max_disparity
            )
            plan = self._plan_planes(answer, size)
            plan.answer = answer
            plan.notes.insert(
                0,
                f"budget {budget:g} ms is below the cheapest continuous depth here "
                f"(about {cheapest:.0f} ms): "
                f"answered {chosen.describe()} instead",
            )
            plan.choice = {
                **choice,
                "planes": float(len(plan.planes)),
                "quantized": 1.0,
                "cheapest_ms": cheapest,
            }
            return plan
        strategy = chosen.strategy
        note = f"budget {budget:g} ms: {chosen.describe()} (predicted {chosen.predicted_ms:.0f} ms)"
        if strategy.coarse_step:
            found = search_plan(request, strategy, top)
            choice.update(
                step_px=float(FEATURE_STRIDE),
                coarse_px=float(strategy.coarse_step),
                passes=float(strategy.passes),
                subpixel=SUBPIXEL_CODES[strategy.subpixel],
                planes=float(len(found.planes)),
            )
            return Plan(found.planes, FEATURE_STRIDE, found.span, [note], choice, strategy=strategy)
        first, last = dense_span(span[0], span[1], strategy.step, top)
        if self.model.refinenet3d is not None and strategy.step == FEATURE_STRIDE:
            first, last = self._fit_3d(first, last, top, [])
        planes = np.arange(first, last + 1, strategy.step, dtype=np.float64)
        choice.update(
            step_px=float(strategy.step),
            subpixel=SUBPIXEL_CODES[strategy.subpixel],
            planes=float(len(planes)),
        )
        return Plan(planes, strategy.step, (first, last), [note], choice, strategy=strategy)

    def _plan_selective_budget(self, request: DepthRequest, size: tuple[int, int]) -> Plan:
        """Selective depth under a budget: the most accurate full-sweep strategy of the ladder
        that fits over the range (``depth.strategies``), its planes from the range's near edge,
        so that the edges decide what is inside; below the cheapest, as many planes as fit
        without sub-pixel matching, said. The plane count alone was chosen, and 2 planes every
        99 px for 20-174 px began at 0 px: the far wall read 20 px, inside, and the sub-pixel
        search widened to the step took 743 ms of a 70 ms budget."""
        assert request.budget_ms is not None
        budget, top = request.budget_ms, self.model.max_disparity
        lo, hi = continuous_range(request)
        config = self.subpixel or DEFAULT_SUBPIXEL
        runs = self._subpixel_runs()
        chosen = choose(self.costs, size, budget, (lo, hi), top, runs, self.model.max_shift - 1, config)
        choice = {"predicted_ms": chosen.predicted_ms, "budget_ms": budget}
        if chosen.strategy is not None:
            strategy = chosen.strategy
            note = f"budget {budget:g} ms: {chosen.describe()} (predicted {chosen.predicted_ms:.0f} ms)"
        else:  # the range's edges and what fits between them, the depth inside coarse
            step = FEATURE_STRIDE
            while True:  # sized as the frame runs: a dense answer, not plane answers
                count = edge_planes(lo, hi, step, top).size
                predicted = self.costs.predict_dense_ms(size, count, "off", 0)
                if predicted <= budget or count <= 2 or step >= top:
                    break
                step += FEATURE_STRIDE
            strategy = Strategy(coarse_step=0, step=step, subpixel="off")
            cheapest = cheapest_ms(self.costs, size, (lo, hi), top, runs, config)
            choice["predicted_ms"] = predicted
            note = (
                f"budget {budget:g} ms is below selective depth every 12 px or finer here (about "
                f"{cheapest:.0f} ms): {count} planes every {step} px without sub-pixel matching; what is "
                "inside the range holds, the depth inside it is coarse"
            )
            choice["cheapest_ms"] = cheapest
        planes = edge_planes(lo, hi, strategy.step, top)
        choice.update(
            planes=float(len(planes)),
            step_px=float(strategy.step),
            subpixel=SUBPIXEL_CODES[strategy.subpixel],
        )
        span = (int(planes[0]), int(planes[-1]))
        return Plan(planes, strategy.step, span, [note], choice, strategy=strategy)

    def _plan_search(self, request: DepthRequest) -> Plan | None:
        """The coarse-to-fine plan of a continuous request (``depth.searched``), or None for the
        full sweep: asked for, not continuous, or not available here (with a note if asked for)."""
        if request.mode is not Mode.CONTINUOUS or not self._searches() or request.budget_ms is not None:
            return None
        if can_search(self.model, self.backend):
            return None
        found = search_plan(request, self.strategy, self.model.max_disparity)
        passes = found.strategy.passes
        note = (
            f"coarse-to-fine search: {len(found.planes)} planes every {found.strategy.coarse_step} px, "
            f"then {passes} per-pixel pass{'es' if passes != 1 else ''}"
        )
        return Plan(found.planes, FEATURE_STRIDE, found.span, [note, *found.notes], strategy=found.strategy)

    def _search_ready(self) -> bool:
        """Whether the latency budget may choose the coarse-to-fine search: asked for, or
        ``auto`` with per-pixel weights trained for it (``LightBi3D.pixel_segnet``: a SegNet
        trained on uniform planes only answers the search's scene-following plane maps unlike
        its sweep), and it can run here."""
        if self.search == "full" or can_search(self.model, self.backend):
            return False
        return self._searches() or getattr(self.model, "pixel_segnet", None) is not None

    def _searches(self) -> bool:
        """Whether continuous depth without a budget runs the coarse-to-fine search: only when
        asked for. ``auto`` keeps the full sweep: with the bundled per-pixel weights the search
        is 3-4 points of bad-2 less accurate on the demo pair and held-out scenes
        (benchmarks/RESULTS.md, tenth session)."""
        return self.search == "coarse-to-fine"

    @staticmethod
    def _fit_3d(first: int, last: int, top: int, notes: list[str]) -> tuple[int, int]:
        """The 3D regulariser needs (last - first) / 3 to be a multiple of 16."""
        block = 16 * FEATURE_STRIDE
        extra = (-(last - first)) % block
        if extra:
            grow_up = min(extra, top - last)
            first, last = first - (extra - grow_up), last + grow_up
            notes.append(f"plane range widened to [{first}, {last}] px for the 3D regulariser")
        return first, last

    def _shifts(self, planes: np.ndarray) -> Tensor:
        return torch.as_tensor(planes / FEATURE_STRIDE, dtype=torch.float32)

    def _sweep(self, feats: FrameFeatures, shifts: Tensor, chunk: int) -> Tensor:
        """SegNet over all planes, chunk by chunk, stopping early when interrupted."""
        parts = []
        for start in range(0, shifts.numel(), chunk):
            if self.interrupt is not None and self.interrupt.is_set():
                raise Interrupted("depth computation stopped")
            parts.append(self.backend.planes(feats, shifts[start : start + chunk]))
        return torch.cat(parts, dim=1)

    def _chunk(self, size: tuple[int, int]) -> int:
        h, w = size[0] // FEATURE_STRIDE, size[1] // FEATURE_STRIDE + self.model.max_shift
        per_plane = 4 * 3 * self.model.widest_channels * h * w
        chunk = int(max(1, min(64, self.max_chunk_bytes // per_plane)))
        limit = self.backend.max_planes  # e.g. a TensorRT profile's largest plane batch
        return min(chunk, limit) if limit else chunk

    def _probe_costs(self, l_in: Tensor, r_in: Tensor, size: tuple[int, int]) -> None:
        """Seed the cost model for a new frame size with one feature pass and two planes, after
        one untimed pass of each (a new size's first call sets up its kernels: 1.4 s measured at
        576 x 768 here, against 30 ms for the next)."""
        self.backend.planes(self.backend.features(l_in, r_in), torch.tensor([0.0]))
        t0 = time.perf_counter()
        feats = self.backend.features(l_in, r_in)
        self._sync()
        t1 = time.perf_counter()
        self.backend.planes(feats, torch.tensor([0.0, 1.0]))
        self._sync()
        t2 = time.perf_counter()
        self.costs.update(size, (t1 - t0) * 1000, (t2 - t1) * 1000, 2, seed=True)

    def _probe_dense(
        self,
        request: DepthRequest,
        l_in: Tensor,
        r_in: Tensor,
        padder: Padder,
        images: tuple[np.ndarray, np.ndarray],
        strategy: Strategy,
    ) -> None:
        """Seed the cost model's full-sweep dense costs for a new frame size: one continuous
        answer over the probe's planes, timed stage by stage as a frame is. Without it the first
        budgets of a size predict dense depth from the plane passes alone, and a budget met
        before any continuous frame was measured falls back to quantized depth it did not need.
        Timed on the second of two answers: the first at a size pays for fresh buffers (measured
        at Motorcycle's size: 251 against 214 ms). Without the sub-pixel stage, which
        ``probe_subpixel`` has just measured per shift.
        ``strategy`` a coarse-to-fine one: the search's costs instead (3 coarse planes, 3
        per-pixel passes)."""
        if strategy.coarse_step:
            planes = coarse_planes(0, 2 * strategy.coarse_step, strategy.coarse_step)
        else:
            planes = np.arange(3, dtype=np.float64) * FEATURE_STRIDE
        plan = Plan(planes, FEATURE_STRIDE, (0, int(planes[-1])), strategy=strategy)
        answer = dataclasses.replace(
            request, mode=Mode.CONTINUOUS, budget_ms=None, auto_range=False, range=None
        )
        for _ in range(2):
            timings: dict[str, float] = {}
            t0 = time.perf_counter()
            with self._timed(timings, "features"):
                feats = self.backend.features(l_in, r_in)
            with self._timed(timings, "planes"):
                lowres = self.backend.planes(feats, self._shifts(planes))
            self._readout(answer, plan, feats, lowres, padder, timings, images)
            timings["total"] = (time.perf_counter() - t0) * 1000
        self._record_costs(padder.padded_size, answer, plan, timings)

    def _answer_notes(
        self, request: DepthRequest, found: SceneRange | None, ceiling: float, width: int
    ) -> Callable[[DepthResult], list[str]]:
        """What a continuous answer's notes count in it (how many read at the sweep's top), as a
        reading the window can make again of the same answers under another min confidence."""
        if request.mode is not Mode.CONTINUOUS:
            return _no_notes
        if found is None:  # a range the user fixed
            return functools.partial(beyond_note, top=request.max_disparity)
        if request.max_disparity < ceiling:  # auto, with room left
            return _no_notes
        remedy = ceiling_remedy(self.model.max_disparity, ceiling, width)

        def at_ceiling(result: DepthResult) -> list[str]:
            return ceiling_note(result.disparity, request.max_disparity, remedy, found.estimate)

        return at_ceiling

    # ---- readout ------------------------------------------------------------------
    def _readout(
        self,
        request: DepthRequest,
        plan: Plan,
        feats: FrameFeatures,
        lowres: Tensor,
        padder: Padder,
        timings: dict[str, float],
        images: tuple[np.ndarray, np.ndarray],
    ) -> DepthResult:
        if plan.strategy is not None and plan.strategy.coarse_step:
            args = (request, plan.planes, plan.strategy, feats, lowres, padder, timings, images)
            return searched_result(self, *args)
        if request.mode in (Mode.BINARY, Mode.QUANTIZED):
            with self._timed(timings, "refine"):
                # the sigmoid of the crop: a contiguous array that the check and the result keep
                probs = torch.sigmoid(padder.crop(self.backend.refine_planes(feats, lowres)).float())
                probs_np = host_array(probs[0])
            if self.plane_check is not None:
                with self._timed(timings, "check"):
                    check_planes(*images, probs_np, plan.planes.tolist(), self.plane_check)
            if request.mode is Mode.QUANTIZED and self._holds_far_planes():
                hold_far_planes(probs_np, plan.planes, SUPPORT_FROM_PX)  # within the sweep's own planes
            support = self._support_plane(request, plan.planes)
            if support is not None:
                with self._timed(timings, "support"):
                    np.minimum(
                        probs_np[0],
                        self._plane_probabilities(feats, support, padder, images),
                        out=probs_np[0],
                    )
            return self._plane_result(request, plan, probs_np)
        return self._dense_result(request, plan, feats, lowres, padder, timings, images)

    def _support_plane(self, request: DepthRequest, planes: np.ndarray) -> float | None:
        """The plane that supports a far binary plane, or the start of a far selective range, of a
        per-plane classifier of this project (None: none needed): half its disparity, on the
        feature grid. "Closer than P" implies
        "closer than P / 2", and the light model answers a false "closer" on planes far beyond a
        pixel (Motorcycle, truth at most 60 px: 23 % of the pixels "closer than 150 px", 33 % at
        190), while it is sure of the pixels that far from a plane; the answer at P is held to the
        one at P / 2 (``SUPPORT_FROM_PX``)."""
        if request.mode not in (Mode.BINARY, Mode.SELECTIVE) or not self._holds_far_planes():
            return None
        if len(planes) != 1 or float(planes[0]) < SUPPORT_FROM_PX:
            return None
        return float(FEATURE_STRIDE * round(float(planes[0]) / 2 / FEATURE_STRIDE))

    def _holds_far_planes(self) -> bool:
        """Whether far planes are held to the plane at half their disparity: this project's
        per-plane classifiers (the light model), unless ``support`` is off."""
        return self.support and self.model.kind is ModelKind.LIGHT

    def _plane_probabilities(
        self, feats: FrameFeatures, plane: float, padder: Padder, images: tuple[np.ndarray, np.ndarray]
    ) -> np.ndarray:
        """One more plane's H x W probabilities, as the plane pass answers them (checked too)."""
        lowres = self._sweep(feats, self._shifts(np.array([plane])), 1)
        probs = torch.sigmoid(padder.crop(self.backend.refine_planes(feats, lowres)).float())
        out = host_array(probs[0])
        if self.plane_check is not None:
            check_planes(*images, out, [plane], self.plane_check)
        return out[0]

    def _plane_result(self, request: DepthRequest, plan: Plan, probs: np.ndarray) -> DepthResult:
        h, w = probs.shape[-2:]
        confidence = plane_confidence(probs)
        if request.mode is Mode.BINARY:
            mask = probs[0] > 0.5
            disparity = np.full((h, w), np.nan, np.float32)
            return self._result(request, disparity, probs, plan.planes, mask=mask, confidence=confidence)
        # per-plane classifiers of this project near their curve's best step (their false "closer"
        # on far planes); the published networks by the published arg-max, as they were made
        decode = quantized_step if self.model.kind is ModelKind.LIGHT else quantized_disparity
        disparity = decode(probs, plan.planes, request.max_disparity)
        # the left edge's levels that contradict the surface beside them, where the right camera did
        # not see the match (a level in front of the box beside it): unknown, as in continuous depth
        guesses = border_guesses(disparity, farther=False)
        disparity[guesses] = np.nan
        confidence[guesses] = 0.0
        result = self._result(request, disparity, probs, plan.planes, confidence=confidence)
        result.notes.extend(one_level_note(disparity, plan.planes, explicit=bool(request.planes)))
        return result

    def _dense_result(
        self,
        request: DepthRequest,
        plan: Plan,
        feats: FrameFeatures,
        lowres: Tensor,
        padder: Padder,
        timings: dict[str, float],
        images: tuple[np.ndarray, np.ndarray],
    ) -> DepthResult:
        assert plan.span is not None
        first, last = plan.span
        lo, hi = continuous_range(request)
        # a model with upsampling weights (the light model) has its curves read on its own grid,
        # 1/3 of the image, and the answer upsampled (``readout.upsampled_step_fit``)
        guide = None if self.model.has_disp_refine else feats_guide(feats)
        on_grid = guide is not None
        with self._timed(timings, "refine"):
            if self.model.refinenet3d is not None and plan.step == FEATURE_STRIDE:
                lowres = self.backend.regularise(feats, lowres)
            if guide is not None:
                logits = convex_upsample(lowres.float(), guide, 2)
            else:
                logits = self.backend.refine_planes(feats, lowres).float()
        planes = torch.as_tensor(plan.planes, dtype=torch.float32, device=logits.device)
        cost: Tensor | None = None
        with self._timed(timings, "readout"):
            curves = torch.sigmoid(logits)  # once: the readout and the result's probabilities
            if self.model.has_disp_refine:  # published: the area under the curve feeds DispRefine
                dense = integrate_planes(logits, plan.step)
                normalized = self.backend.refine_disparity(feats, dense.normalized).float()
                disp = normalized_to_disparity(normalized, first, last)
            else:  # per-plane classifiers: the best step of each curve (see step_fit)
                if on_grid:  # read on the grid, edges from their own upsampled curves
                    disp, cost = upsampled_step_fit(logits, planes, curves, padder.padded_size)
                else:
                    fit = step_fit(logits, planes, curves)
                    disp, cost = fit.disparity, fit.cost
        disp = padder.crop(disp)[0, 0]
        stepped = disp  # before the sub-pixel stage: the selective range state reads this
        kind = plan.strategy.subpixel if plan.strategy is not None else "colour"
        if self.model.has_disp_refine:
            kind = "off"
        radius = None if plan.strategy is None else plan.strategy.radius
        cost = None if cost is None else padder.crop(cost)[0, 0]
        disp, confidence = match_and_rate(self, images, disp, (kind, plan.step, radius), cost, timings)
        with self._timed(timings, "readout"):
            disparity = disp.cpu().numpy().astype(np.float32)
            # the record on the grid is made when read (files, not the window); curves at the full
            # padded size (the published continuous kinds) are the record itself: copied now, so
            # a kept result holds no frame-sized tensor on the device
            probs: DeferredRecord | np.ndarray
            if on_grid:
                probs = DeferredRecord(curves, padder.padded_size, padder.top, padder.left)
            else:
                probs = host_array(padder.crop(curves)[0])
        if confidence is None:  # a model without the agreement stage: its curve's own step
            if cost is None:  # the published continuous model
                cost = padder.crop(step_fit(logits, planes, curves).cost)[0, 0]
            confidence = curve_confidence(cost).cpu().numpy()
        state = None
        if request.mode is Mode.SELECTIVE and self.model.has_disp_refine:
            # the published selective output is the refined disparity clamped to [lo - 0.5,
            # hi + 0.5]: outside the range is where that answer leaves it
            state = range_state(disparity, lo, hi)
            disparity[state != 0] = np.nan
        elif request.mode is Mode.SELECTIVE:
            # the step lies below the first plane (farther), past the last (closer) or inside
            state = range_state(stepped.cpu().numpy(), lo, hi)
            if lo <= 0:  # nothing lies farther than 0 px (a 64 px pair's left columns read "farther")
                state[state == -1] = 0
            support = self._support_plane(request, np.array([lo]))
            if support is not None:  # a far range: what is farther than half its start is farther
                with self._timed(timings, "support"):
                    # not "closer" at half the start (a NaN, from broken weights, is not either)
                    state[~(self._plane_probabilities(feats, support, padder, images) > 0.5)] = -1
            disparity[state != 0] = np.nan
            np.clip(disparity, lo, hi, out=disparity)  # "inside" reads inside, whatever the refinement did
        unmasked = leave_unknown(disparity, confidence, request.min_confidence)
        return self._result(
            request,
            disparity,
            probs,
            plan.planes,
            range_state=state,
            confidence=confidence,
            unmasked=unmasked,
        )

    def _result(
        self,
        request: DepthRequest,
        disparity: np.ndarray,
        probs: np.ndarray | DeferredRecord,
        planes: np.ndarray,
        **extra: np.ndarray | None,
    ) -> DepthResult:
        # the network's own answers: NaN only from broken weights or an overflow. A sum finds
        # one (3 against 10 ms for 29 planes at Motorcycle's size); counting them only then
        deferred: DeferredRecord | None = None
        if isinstance(probs, DeferredRecord):
            deferred, finite = probs, probs.finite()
            record = np.empty((len(planes), 0, 0), np.float32) if finite else probs.record()
        else:
            record = probs
            finite = not record.size or bool(np.isfinite(record.sum(dtype=np.float32)))
        broken = 0.0 if finite else float(np.isnan(record).mean())
        if broken:
            raise UserError(
                f"the network answered NaN for {100 * broken:.1f}% of its plane probabilities "
                f"({self.backend.name}, {self.backend.precision}); try --precision fp32, or other weights"
            )
        if request.mode is Mode.CONTINUOUS and len(planes):
            # nothing is known beyond the planes swept (full sweep or search): the refinement's
            # moves past the first or last plane (below 0 px: behind the rig) are pinned there,
            # and never past the maximum asked for (20 px sweeps to the plane at 21 px)
            top = min(float(planes[-1]), float(request.max_disparity))
            for answers in (disparity, extra.get("unmasked")):
                if answers is not None:
                    np.clip(answers, min(float(planes[0]), 0.0), top, out=answers)
        result = DepthResult(
            disparity=disparity,
            probabilities=np.ascontiguousarray(record, np.float32),
            planes=np.asarray(planes, np.float32),
            mode=request.mode,
            engine=self.name,
            device=self.device.type,
            runtime=self.backend.name,
            precision=self.backend.precision,
            **extra,  # type: ignore[arg-type]
        )
        if deferred is not None:
            result.defer_probabilities(deferred.record, deferred.plane)
        return result

    # ---- helpers ------------------------------------------------------------------
    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    @contextlib.contextmanager
    def _timed(self, timings: dict[str, float], stage: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        self._sync()
        timings[stage] = timings.get(stage, 0.0) + (time.perf_counter() - t0) * 1000


def _no_notes(result: DepthResult) -> list[str]:
    return []


def beyond_note(result: DepthResult, top: float | None = None) -> list[str]:
    """A note when a share of the pixels (``BEYOND_NOTE_SHARE``) is nearer than a continuous
    sweep's last plane: "closer" there, and answered at that plane (within one plane step), or at
    ``top``, the maximum asked for, where the last plane passes it. The
    curve at the last plane alone is not enough: a per-plane classifier answers "closer" on far
    planes beyond a scene (isolated false runs the step readout passes over), which on the
    Motorcycle pair at 0-192 px made a third of the pixels "nearer than 192 px" while none read
    more than 60 px."""
    planes = result.planes
    if len(planes) == 0:
        return []
    last = float(planes[-1])
    step = float(planes[-1] - planes[-2]) if len(planes) > 1 else 1.0
    with np.errstate(invalid="ignore"):
        beyond = float(np.mean((result.plane_probabilities(-1) > 0.5) & (result.disparity >= last - step)))
    if beyond < BEYOND_NOTE_SHARE:
        return []
    return [beyond_text(beyond, last if top is None else min(last, float(top)))]


def one_level_note(disparity: np.ndarray, planes: np.ndarray, explicit: bool = False) -> list[str]:
    """Quantized levels that miss the scene: a note when most pixels (``ONE_LEVEL_SHARE``) lie
    nearer than the nearest plane or farther than the farthest, in the H x W quantized answer
    (bin midpoints, NaN unknown) at ascending ``planes`` (``explicit``: the user's own planes,
    whose remedy is other planes, not a range). Read from the answer, not the nearest plane's
    own probability: a far plane's false "closer" that the answer passes over made the note say
    53 % where 24.6 % of the answer was (review)."""
    if len(planes) < 2:
        return []
    with np.errstate(invalid="ignore"):
        nearer = float(np.mean(disparity > planes[-1]))
        farther = float(np.mean(disparity < planes[0]))
    if max(nearer, farther) < ONE_LEVEL_SHARE:
        return []
    where, plane = (
        ("nearer than the nearest", planes[-1])
        if nearer >= farther
        else ("farther than the farthest", planes[0])
    )
    remedy = (
        f"add planes {'above' if nearer >= farther else 'below'} {float(plane):g} px"
        if explicit
        else "give a range that covers it (or levels spaced in disparity)"
    )
    return [
        f"{100 * max(nearer, farther):.0f} % of the pixels are {where} level ({float(plane):.1f} px): "
        f"the levels miss most of the scene; {remedy}"
    ]
