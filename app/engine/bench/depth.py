"""In-process latency benchmark of the engines (warm-up, then median and p90), per runtime and
precision; ``runtimes.plaster.run_plaster`` adds throughput, accuracy, size and energy."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from app.engine.assets import demo_scene
from app.engine.depth.engines import EngineOptions, build_engine
from app.engine.depth.scene_range import fit_levels, widest_search
from app.engine.formats import read_image_rgb, read_pfm
from app.engine.types import DepthRequest, Mode


@dataclass(frozen=True)
class BenchRecord:
    engine: str
    mode: str
    planes: int
    height: int
    width: int
    device: str
    runtime: str
    precision: str
    median_ms: float
    p90_ms: float
    model_width: float | None = None
    features_ms: float | None = None
    planes_ms: float | None = None
    check_ms: float | None = None  # Bi3D's plane check (binary and quantized answers of the light model)
    asked: str = ""  # the runtime and precision asked for ("onnxruntime bf16"), where it is not what ran
    note: str = ""  # why what ran is not what was asked (the runtime chain's reasons)
    requested: int = 0  # the plane count asked for (two counts may sweep as many planes)

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in dataclasses.asdict(self).items()}


def bench_request(mode: str, planes: int, max_disparity: int) -> DepthRequest:
    """A request that sweeps about ``planes`` planes in the given mode."""
    m = Mode(mode)
    if m is Mode.BINARY:
        return DepthRequest(mode=m, planes=(max_disparity / 4,), max_disparity=max_disparity)
    if m is Mode.QUANTIZED:  # at most one level a px of the range
        return DepthRequest(mode=m, levels=fit_levels(planes, 0, max_disparity), max_disparity=max_disparity)
    if m is Mode.SELECTIVE:
        top = min(3.0 * max(planes - 1, 1), float(max_disparity))
        return DepthRequest(mode=m, range=(0.0, top), max_disparity=max_disparity)
    return DepthRequest(mode=m, max_disparity=max_disparity)


def bench_images(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The demo pair resized to the benchmark size (content matters for SGBM's cost)."""
    scene = demo_scene()
    pair = [read_image_rgb(scene / name) for name in ("im0.png", "im1.png")]
    return tuple(cv2.resize(img, (width, height), interpolation=cv2.INTER_AREA) for img in pair)  # type: ignore[return-value]


def bench_ground_truth(height: int, width: int) -> np.ndarray:
    """The demo pair's ground-truth disparity at the benchmark size (scaled with the width)."""
    gt = read_pfm(demo_scene() / "disp0GT.pfm")
    resized = cv2.resize(gt, (width, height), interpolation=cv2.INTER_NEAREST)
    return resized * (width / gt.shape[1])


def variants(
    name: str, options: EngineOptions, runtimes: list[str] | None, precisions: list[str] | None
) -> list[tuple[str, str]]:
    """(runtime, precision) pairs to measure: every combination for Bi3D, the options' for SGBM."""
    if name != "bi3d":
        return [(options.runtime, options.precision)]
    return [(rt, p) for rt in (runtimes or [options.runtime]) for p in (precisions or [options.precision])]


MAX_WARMUP = 10  # calls at most before a configuration is timed
SETTLED = 1.25  # a warm-up call less than this x faster than the previous one: warm


def settle(call: Callable[[], float], count: int) -> None:
    """At least ``count`` calls of ``call`` (which returns its time; none if ``count`` is 0), and
    more (up to ``MAX_WARMUP``) until one is no longer ``SETTLED`` x faster than the one before
    (so at least two): with one warm-up call, the first configuration of a run was timed at 10-25 x
    its time (one-time costs still paid)."""
    previous = float("inf")
    for i in range(max(count, MAX_WARMUP) if count else 0):
        took = call()
        if i + 1 >= count and i >= 1 and took * SETTLED >= previous:  # no longer getting faster
            return
        previous = took


@dataclass
class _Timing:
    """One engine on one request: its timed calls and the last result."""

    engine: Any
    request: DepthRequest
    times: list[float] = field(default_factory=list)
    stages: list[dict[str, float]] = field(default_factory=list)
    result: Any = None

    def warm_up(self, left: np.ndarray, right: np.ndarray, count: int) -> None:
        """``settle``: at least ``count`` calls of the engine (none if 0), until they settle."""

        def call() -> float:
            t0 = time.perf_counter()
            self.result = self.engine.compute(left, right, self.request)
            return time.perf_counter() - t0

        settle(call, count)

    def run(self, left: np.ndarray, right: np.ndarray) -> None:
        t0 = time.perf_counter()
        self.result = self.engine.compute(left, right, self.request)
        self.times.append((time.perf_counter() - t0) * 1000)
        self.stages.append(self.result.timings)


def time_engine(
    engine: Any, left: np.ndarray, right: np.ndarray, request: DepthRequest, warmup: int, repeat: int
) -> tuple[list[float], list[dict[str, float]], Any]:
    timing = _Timing(engine, request)
    timing.warm_up(left, right, warmup)
    for _ in range(repeat):
        timing.run(left, right)
    return timing.times, timing.stages, timing.result


def run_bench(
    engines: list[str],
    modes: list[str],
    plane_counts: list[int],
    sizes: list[tuple[int, int]],
    options: EngineOptions,
    widths: list[float | None],
    repeat: int = 5,
    warmup: int = 1,
    max_disparity: int = 192,
    runtimes: list[str] | None = None,
    precisions: list[str] | None = None,
) -> list[BenchRecord]:
    """Median and p90 latency of every engine variant, SGBM always among them.

    The variants of one size are timed in rounds, one call of each per round, so a drift
    in the machine's speed (turbo, thermal limits, neighbours on a shared VM) reaches every
    engine alike and the ratios to SGBM stay fair.
    """
    records: list[BenchRecord] = []
    names = list(dict.fromkeys([*engines, "sgbm"]))  # the baseline is always measured
    for height, width in sizes:
        left, right = bench_images(height, width)
        # no match lies farther than the image is wide: both engines are asked what SGBM can search
        # (a 32 x 32 size failed on "plane 48 px is outside [0, 16] px" from --max-disparity 192)
        reach = min(max_disparity, widest_search(width))
        jobs: list[tuple[str, str, float | None, Asked, _Timing]] = []
        for name in names:
            for model_width in widths if name == "bi3d" else [None]:
                for runtime, precision in variants(name, options, runtimes, precisions):
                    for mode in modes:
                        kind = "binary" if mode in ("binary", "quantized") else "continuous_2d"
                        opts = dataclasses.replace(
                            options, engine=name, width=model_width, runtime=runtime, precision=precision
                        )
                        engine, _ = build_engine(opts, kind)
                        counts = [1] if mode == "binary" else plane_counts
                        counts = counts[:1] if mode == "continuous" else counts
                        for count in counts:
                            request = bench_request(mode, count, reach)
                            asked = Asked(runtime, precision, count, opts.search)
                            jobs.append((name, mode, model_width, asked, _Timing(engine, request)))
        for *_, timing in jobs:
            timing.warm_up(left, right, warmup)
        for _ in range(repeat):
            for *_, timing in jobs:
                timing.run(left, right)
        for name, mode, model_width, asked, t in jobs:
            record = _record(name, mode, t.result, height, width, t.times, t.stages, model_width)
            record = dataclasses.replace(record, requested=asked.planes)
            records.append(_with_asked(record, asked, t.result) if name == "bi3d" else record)
    return records


@dataclass(frozen=True)
class Asked:
    """What a bench row asked of the engine."""

    runtime: str
    precision: str
    planes: int
    search: str


def _with_asked(record: BenchRecord, asked: Asked, result: Any) -> BenchRecord:
    """``record`` with what was asked where it ran otherwise (a runtime or precision that fell back:
    a row for TensorRT showed ONNX Runtime, unsaid), and the reasons: the runtime's note."""
    fell_back = asked.runtime not in ("auto", record.runtime) or asked.precision not in (
        "auto",
        record.precision,
    )
    search = asked.search == "coarse-to-fine" and record.mode == "continuous"
    # the search asked for, said as such (it read "auto auto asked, torch fp32 ran": review)
    skipped = (
        [f"--search coarse-to-fine asked, {n}" for n in result.notes if "full sweep:" in n] if search else []
    )
    if not (fell_back or skipped):
        return record
    reasons = (
        [n.removeprefix(f"runtime {record.runtime}: ") for n in result.notes if n.startswith("runtime ")]
        if fell_back
        else []
    )
    return dataclasses.replace(
        record,
        asked=f"{asked.runtime} {asked.precision}" if fell_back else "",
        note="; ".join([*skipped, *reasons]) or "the runtime gave no reason",
    )


def _record(
    name: str,
    mode: str,
    result: Any,
    height: int,
    width: int,
    times: list[float],
    stages: list[dict[str, float]],
    model_width: float | None,
) -> BenchRecord:
    def med(key: str) -> float | None:
        vals = [s[key] for s in stages if key in s]
        return float(np.median(vals)) if vals else None

    return BenchRecord(
        engine=name,
        mode=mode,
        planes=len(result.planes),
        height=height,
        width=width,
        device=result.device,
        runtime=result.runtime,
        precision=result.precision,
        median_ms=float(np.median(times)),
        p90_ms=float(np.percentile(times, 90)),
        model_width=model_width,
        features_ms=med("features"),
        planes_ms=med("planes"),
        check_ms=med("check"),
    )


def bench_table(records: list[BenchRecord]) -> str:
    """Plain-text table; ``x sgbm`` is the median relative to SGBM at the same size, mode and planes
    (continuous: the same range, whatever the planes swept: the coarse-to-fine search sweeps
    fewer than SGBM's 65)."""

    def key(r: BenchRecord) -> tuple[int, int, str, int | None]:
        # the count asked for: two (1 and 2 selective planes) may sweep as many
        return (r.height, r.width, r.mode, None if r.mode == "continuous" else (r.requested or r.planes))

    base = {key(r): r.median_ms for r in records if r.engine == "sgbm"}
    head = (
        f"{'engine':<6} {'runtime':<13} {'prec':<4} {'width':>5} {'mode':<10} {'size':>9} {'planes':>6} "
        f"{'median':>9} {'p90':>9} {'features':>8} {'planes':>9} {'check':>6} {'x sgbm':>7}"
    )
    lines = [head]
    # a fallback is marked on its rows (torch*1) and said once under the table
    said: dict[tuple[str, str, str], int] = {}
    for r in records:
        if r.asked or r.note:
            said.setdefault(_fallback(r), len(said) + 1)
    for r in records:
        ratio = r.median_ms / base[key(r)] if key(r) in base else np.nan
        runtime = f"{r.runtime}*{said[_fallback(r)]}" if r.asked or r.note else r.runtime
        lines.append(
            f"{r.engine:<6} {runtime:<13} {r.precision:<4} "
            f"{'' if r.model_width is None else f'{r.model_width:g}':>5} {r.mode:<10} "
            f"{f'{r.height}x{r.width}':>9} {r.planes:>6} {r.median_ms:>9.1f} {r.p90_ms:>9.1f} "
            f"{_ms(r.features_ms):>8} {_ms(r.planes_ms):>9} {_ms(r.check_ms):>6} {ratio:>7.2f}"
        )
    for (asked, ran, note), n in said.items():
        lines.append(f"*{n}: {asked} asked, {ran} ran: {note}" if asked != ran else f"*{n}: {note}")
    lines.append(
        "times in ms: median and p90 of the whole frame, then the median of its features, planes and "
        "check stages; planes: how many were swept; x sgbm: the median over SGBM's at the same size and "
        "mode (and plane count, but for continuous)"
    )
    return "\n".join(lines)


def _fallback(r: BenchRecord) -> tuple[str, str, str]:
    """(asked, ran, why) of a row that ran otherwise than asked."""
    ran = f"{r.runtime} {r.precision}"
    return (r.asked or ran, ran, r.note)


def _ms(value: float | None) -> str:
    """A stage's median for the table: blank where the engine has no such stage."""
    return "" if value is None else f"{value:.1f}"
