"""Latency of optical-flow backends per size (``bi3d-studio bench --flow-backends``)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.engine.errors import UserError
from app.engine.flow.base import FlowBackend, FlowResult, elapsed_ms
from app.engine.flow.choose import create_flow_backend, parse_backend_spec


@dataclass(frozen=True)
class FlowBenchRecord:
    spec: str
    backend: str
    preset: str | None
    height: int
    width: int
    device: str
    median_ms: float | None
    p90_ms: float | None
    grid: int = 1
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in dataclasses.asdict(self).items()}


def run_flow_bench(
    specs: list[str],
    sizes: list[tuple[int, int]],
    repeat: int = 5,
    warmup: int = 1,
    frames: Callable[[int, int], tuple[np.ndarray, np.ndarray]] | None = None,
    cv: Any = None,
) -> list[FlowBenchRecord]:
    """Median and p90 latency of each backend spec (see ``parse_backend_spec``) at each size.

    A backend that cannot run here gives a record without times and the reason in ``note``.
    """
    parsed = [(spec, *parse_backend_spec(spec)) for spec in specs]  # bad specs fail before timing
    records = []
    for height, width in sizes:
        frame0, frame1 = (frames or _bench_frames)(height, width)
        for spec, name, options in parsed:
            try:
                backend, _ = create_flow_backend(name, options, cv)
            except UserError as exc:  # the backend cannot run here (specs were checked above)
                records.append(
                    FlowBenchRecord(spec, name, options.preset, height, width, "", None, None, note=str(exc))
                )
                continue
            try:
                result, times = _time_flow(backend, frame0, frame1, repeat, warmup)
            finally:
                backend.close()
            records.append(
                FlowBenchRecord(
                    spec,
                    backend.name,
                    backend.preset,
                    height,
                    width,
                    backend.device,
                    float(np.median(times)),
                    float(np.percentile(times, 90)),
                    result.grid,
                    result.note,
                )
            )
    return records


def _bench_frames(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The depth benchmark's demo pair: its horizontal motion stands in for camera motion."""
    from app.engine.bench.depth import bench_images

    return bench_images(height, width)


def _time_flow(
    backend: FlowBackend, frame0: np.ndarray, frame1: np.ndarray, repeat: int, warmup: int
) -> tuple[FlowResult, list[float]]:
    for _ in range(warmup):
        backend.compute(frame0, frame1)
    times = []
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        result = backend.compute(frame0, frame1)
        times.append(elapsed_ms(t0, time.perf_counter()))
    return result, times


def flow_bench_table(records: list[FlowBenchRecord]) -> str:
    """Plain-text table of flow latency; backends that cannot run here say why."""
    lines = [
        f"{'flow':<14} {'backend':<9} {'preset':<9} {'size':>9} {'device':<7} {'grid':>4} "
        f"{'median':>9} {'p90':>9}"
    ]
    for r in records:
        size = f"{r.height}x{r.width}"
        if r.median_ms is None or r.p90_ms is None:
            lines.append(f"{r.spec:<14} {r.backend:<9} {'-':<9} {size:>9} unavailable: {r.note}")
            continue
        lines.append(
            f"{r.spec:<14} {r.backend:<9} {r.preset or '-':<9} {size:>9} {r.device:<7} {r.grid:>4} "
            f"{r.median_ms:>9.1f} {r.p90_ms:>9.1f}"
        )
    return "\n".join(lines)
