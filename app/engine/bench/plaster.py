"""PLASTER figures per runtime and precision, as NVIDIA's inference whitepaper frames them:
latency (from the bench records), throughput at batch 1 and the best batch, accuracy of the
continuous answer on the demo pair (none for random weights: ``--width`` times an untrained
network), model size on disk, energy per frame where ``nvidia-smi`` reports power. (The
whitepaper's programmability and rate of learning are not measurements.) SGBM runs as the
baseline in the same table.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from app.engine.bi3d.padding import Padder, to_network_input
from app.engine.depth.bi3d import Bi3DEngine
from app.engine.types import DepthRequest, Mode

if TYPE_CHECKING:
    from app.engine.depth.engines import EngineOptions

BATCHES = {"cpu": (1, 2, 4), "cuda": (1, 2, 4, 8, 16)}


@dataclass(frozen=True)
class PlasterRow:
    engine: str
    runtime: str
    precision: str
    device: str
    model_width: float | None
    height: int
    width: int
    fps_batch1: float
    best_fps: float
    best_batch: int
    bad2: float | None  # dense bad-2 fraction of the continuous answer on the demo pair; None: random weights
    epe: float | None
    max_dp_vs_torch: float | None  # largest probability difference to torch fp32, same weights
    size_mb: float | None
    joules_per_frame: float | None

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def run_plaster(
    engines: list[str],
    sizes: list[tuple[int, int]],
    options: EngineOptions,
    widths: list[float | None],
    runtimes: list[str] | None = None,
    precisions: list[str] | None = None,
    levels: int = 16,
    max_disparity: int = 192,
    repeat: int = 3,
) -> list[PlasterRow]:
    """One row per engine, model width, runtime and precision; SGBM always included."""
    # OpenCV comes in with these; the power sampler above must stay importable without it
    from app.engine.bench.depth import bench_ground_truth, bench_images, variants
    from app.engine.depth.engines import build_engine

    rows = []
    # the probabilities compared across runtimes: a quantized sweep of ``levels`` planes
    probe = DepthRequest(mode=Mode.QUANTIZED, levels=levels, max_disparity=max_disparity)
    for height, width in sizes:
        left, right = bench_images(height, width)
        gt = bench_ground_truth(height, width)
        for name in list(dict.fromkeys([*engines, "sgbm"])):
            for model_width in widths if name == "bi3d" else [None]:
                for runtime, precision in variants(name, options, runtimes, precisions):
                    opts = dataclasses.replace(
                        options, engine=name, width=model_width, runtime=runtime, precision=precision
                    )
                    engine, _ = build_engine(opts, "binary")
                    rows.append(_row(engine, name, model_width, left, right, gt, probe, repeat))
    return rows


def _row(
    engine: Any,
    name: str,
    model_width: float | None,
    left: np.ndarray,
    right: np.ndarray,
    gt: np.ndarray,
    probe: DepthRequest,
    repeat: int,
) -> PlasterRow:
    """``model_width`` is set only for random weights (timing): their accuracy is not reported.
    Accuracy is the continuous answer's (a quantized one is off by up to half a level step:
    16 levels over 192 px score 70-100 % bad-2 whatever the network)."""
    from app.engine.bench.depth import bench_request, time_engine
    from app.engine.metrics import evaluate

    bad2 = epe = None
    if model_width is None:
        dense = evaluate(engine.compute(left, right, continuous_request(probe)).disparity, gt)["dense"]
        bad2, epe = dense.bad2, dense.epe
    result = engine.compute(left, right, probe)
    dp, size_mb, joules = None, None, None
    if isinstance(engine, Bi3DEngine):
        reference = Bi3DEngine(
            engine.model, engine.device.type, subpixel=engine.subpixel, plane_check=engine.plane_check
        )
        dp = float(np.abs(reference.compute(left, right, probe).probabilities - result.probabilities).max())
        fps, joules = throughput(engine, left, right, repeat)
        size_mb = size_on_disk_mb(engine)
    else:
        request = bench_request("binary", 1, probe.max_disparity)
        times, _, _ = time_engine(engine, left, right, request, 1, repeat)
        fps = {1: 1000.0 / float(np.median(times))}
    best = max(fps, key=lambda b: fps[b])
    return PlasterRow(
        engine=name,
        runtime=result.runtime,
        precision=result.precision,
        device=result.device,
        model_width=model_width,
        height=left.shape[0],
        width=left.shape[1],
        fps_batch1=fps[1],
        best_fps=fps[best],
        best_batch=best,
        bad2=bad2,
        epe=epe,
        max_dp_vs_torch=dp,
        size_mb=size_mb,
        joules_per_frame=joules,
    )


def continuous_request(probe: DepthRequest) -> DepthRequest:
    """The default continuous answer over the probe's range, the one scored for accuracy."""
    return DepthRequest(mode=Mode.CONTINUOUS, max_disparity=probe.max_disparity)


class PowerSampler:
    """Mean GPU power (W) over a block, sampled from ``nvidia-smi`` at about 10 Hz; None if unreadable."""

    def __init__(self, device: str) -> None:
        self.enabled = (
            device == "cuda" and shutil.which("nvidia-smi") is not None and read_power() is not None
        )
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PowerSampler:
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    @property
    def watts(self) -> float | None:
        return float(np.mean(self.samples)) if self.samples else None

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            value = read_power()
            if value is not None:
                self.samples.append(value)


def read_power() -> float | None:
    """Board power of GPU 0 in watts, or None ("[N/A]", no driver, no nvidia-smi)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=power.draw", "--format=csv,noheader,nounits", "--id=0"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
        return float(out.splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def throughput(
    engine: Any, left: np.ndarray, right: np.ndarray, repeat: int = 3
) -> tuple[dict[int, float], float | None]:
    """Frames per second of the network (features, one plane, refinement) per batch size,
    and joules per frame at the best batch where power is readable."""
    from app.engine.bench.depth import settle  # OpenCV comes in with it (see run_plaster)

    backend = engine.backend
    device = engine.device
    padder = Padder(left.shape[0], left.shape[1], minimum=engine.model.min_size)
    fps: dict[int, float] = {}
    joules = None
    with torch.inference_mode():
        one_l = padder.pad(to_network_input(left, device))
        one_r = padder.pad(to_network_input(right, device))
        backend.prepare(one_l, one_r)
        shifts = torch.tensor([8.0])
        for batch in BATCHES[device.type]:
            l_in, r_in = (
                one_l.expand(batch, -1, -1, -1).contiguous(),
                one_r.expand(batch, -1, -1, -1).contiguous(),
            )
            try:
                with backend.context():  # warm: one call before batch 1 left it at 13 or 94 fps
                    settle(lambda: _network_ms(backend, l_in, r_in, shifts), 1)  # noqa: B023 - called here
                with backend.context(), PowerSampler(device.type) as power:
                    times = [_network_ms(backend, l_in, r_in, shifts) for _ in range(repeat)]
            except (RuntimeError, MemoryError):  # out of memory, or a profile without this batch
                break
            fps[batch] = 1000.0 * batch / float(np.median(times))
            if power.watts is not None and fps[batch] == max(fps.values()):
                joules = power.watts / fps[batch]
    return fps, joules


def _network_ms(backend: Any, left: torch.Tensor, right: torch.Tensor, shifts: torch.Tensor) -> float:
    t0 = time.perf_counter()
    feats = backend.features(left, right)
    backend.refine_planes(feats, backend.planes(feats, shifts))
    if left.is_cuda:
        torch.cuda.synchronize(left.device)
    return (time.perf_counter() - t0) * 1000


def size_on_disk_mb(engine: Any) -> float | None:
    """What this runtime loads: ONNX files, TensorRT engines, or the weights at their precision."""
    backend = engine.backend.current
    size = getattr(backend, "size_bytes", None)
    if size is not None:
        return float(size) / 1e6
    if backend.name == "torch":
        per = 2 if backend.precision in ("fp16", "bf16") else 4
        return sum(t.numel() * per for t in engine.model.state_dict().values()) / 1e6
    return None


def plaster_table(rows: list[PlasterRow]) -> str:
    head = (
        f"{'engine':<6} {'runtime':<11} {'prec':<4} {'width':>5} {'size':>9} {'fps b1':>7} {'best fps':>9} "
        f"{'batch':>5} {'bad-2%':>6} {'EPE':>6} {'|dp| vs torch':>13} {'MB':>7} {'J/frame':>8}"
    )
    lines = [head]
    for r in rows:
        dp = "" if r.max_dp_vs_torch is None else f"{r.max_dp_vs_torch:.1e}"
        bad2 = "n/a" if r.bad2 is None else f"{100 * r.bad2:.1f}"
        epe = "n/a" if r.epe is None else f"{r.epe:.2f}"
        lines.append(
            f"{r.engine:<6} {r.runtime:<11} {r.precision:<4} "
            f"{'' if r.model_width is None else f'{r.model_width:g}':>5} {f'{r.height}x{r.width}':>9} "
            f"{r.fps_batch1:>7.2f} {r.best_fps:>9.2f} {r.best_batch:>5} "
            f"{bad2:>6} {epe:>6} "
            f"{dp:>13} {'' if r.size_mb is None else f'{r.size_mb:.1f}':>7} "
            f"{'n/a' if r.joules_per_frame is None else f'{r.joules_per_frame:.3f}':>8}"
        )
    lines.append(PLASTER_LEGEND)
    return "\n".join(lines)


PLASTER_LEGEND = (
    "fps: Bi3D's network alone (features, one plane and its refinement, no plane check or "
    "alignment) per batch, SGBM's whole binary frame; the latency table above times both whole. "
    "bad-2% and EPE: the continuous answer, dense. |dp| vs torch: the largest plane probability "
    "apart from torch fp32's, over --planes' largest count of quantized levels. MB: what the runtime "
    "loads (ONNX files, TensorRT engines; for torch, the weights in memory at its precision)."
)
