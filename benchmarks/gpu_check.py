"""GPU check: CUDA correctness of the torch fast path, then the published-width network's latency.

Run from the repository root by ``benchmarks/gpu_check.sh`` on a machine with torch + CUDA (no
OpenCV, Qt or TensorRT needed). Writes ``$OUT/gpu_check.json`` after every measurement, so a
timeout still leaves what was measured; anything missing is recorded as skipped, never fatal.

Measured at 576 x 960 with random published-width (1.0) weights: binary (1 plane, binary kind),
quantized (8 planes, binary kind), continuous (65 planes, continuous_2d kind), in fp32 (IEEE),
tf32, bf16 and fp16, with and without CUDA graphs. ``network_ms`` is the engine's own
features + planes + refine timing (synchronised); ``total_ms`` adds input upload and readout.
Goals on an H200 in fp16: binary <= 1 ms, 8 planes <= 3 ms, 65 planes <= 20 ms.

Environment: OUT (output folder), GPU_CHECK_BUDGET_S (seconds for the timings, default 300),
GPU_CHECK_DEVICE / GPU_CHECK_SIZE / GPU_CHECK_WIDTH (a CPU smoke run: cpu, 192x288, 0.25).
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = Path(os.environ.get("OUT") or ROOT / "out" / "gpu_check")
BUDGET_S = float(os.environ.get("GPU_CHECK_BUDGET_S", "300"))
DEVICE = os.environ.get("GPU_CHECK_DEVICE", "cuda")
SIZE = tuple(int(v) for v in os.environ.get("GPU_CHECK_SIZE", "576x960").split("x"))
WIDTH = float(os.environ.get("GPU_CHECK_WIDTH", "1.0"))
WORKLOADS = (
    ("binary", "binary", 1, 30),
    ("quantized", "binary", 8, 20),
    ("continuous", "continuous_2d", 65, 10),
    # the bundled light model (the app's default), at the same size
    ("binary", "light", 1, 30),
    ("continuous", "light", 65, 10),
)
GOALS_MS = {"binary": 1.0, "quantized": 3.0, "continuous": 20.0}
PRECISIONS = tuple(os.environ.get("GPU_CHECK_PRECISIONS", "fp16,bf16,tf32,fp32").split(","))


class Report:
    """The JSON document, saved atomically after every change worth keeping."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "checks": {},
            "timings": [],
        }
        self.data |= {"skipped": [], "errors": [], "notes": []}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        tmp.replace(self.path)


def stub_missing(report: Report) -> None:
    """The engine modules used here need no OpenCV; a stub keeps a stray import from failing."""
    for name in ("cv2",):
        if importlib.util.find_spec(name) is None:
            stub = types.ModuleType(name)

            def missing(attr: str, _name: str = name) -> Any:
                raise ImportError(f"{_name} is not installed on this machine (needed for {attr})")

            stub.__getattr__ = missing  # type: ignore[method-assign]
            sys.modules[name] = stub
            report.data["notes"].append(
                f"{name} not installed: stubbed (the engine path here does not use it)"
            )


def cuda_environment(torch: Any) -> dict[str, Any]:
    env: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env |= {"gpu": props.name, "capability": f"{props.major}.{props.minor}"}
        env |= {"memory_gib": round(props.total_memory / 2**30, 1), "cudnn": torch.backends.cudnn.version()}
    return env


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {"python": platform.python_version()}
    for module in ("numpy", "onnx", "onnxruntime", "tensorrt", "cv2", "pytest"):
        env[module] = _version(module)
    try:
        query = "--query-gpu=driver_version,power.limit"
        env["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", query, "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        env["nvidia_smi"] = None
    return env


def _version(module: str) -> str | None:
    if module in sys.modules and getattr(sys.modules[module], "__file__", None) is None:
        return None  # our stub
    if importlib.util.find_spec(module) is None:
        return None
    try:
        return str(getattr(__import__(module), "__version__", "present"))
    except Exception as exc:  # a broken install is worth a line, not a crash
        return f"import failed: {type(exc).__name__}"


def textured_pair(height: int, width: int, shift: int = 12) -> tuple[Any, Any]:
    """Blobby random texture (not pixel noise) and its copy shifted ``shift`` px: H x W x 3 uint8."""
    import numpy as np

    rng = np.random.default_rng(0)
    small = rng.integers(0, 255, (height // 4 + 1, width // 4 + 1, 3), dtype=np.uint8)
    left = np.repeat(np.repeat(small, 4, 0), 4, 1)[:height, :width]
    return np.ascontiguousarray(left), np.ascontiguousarray(np.roll(left, -shift, axis=1))


def make_engine(model: Any, precision: str, graphs: bool) -> Any:
    import torch

    from app.engine.depth.bi3d import Bi3DEngine
    from app.engine.runtimes.select import open_runtime

    chain = open_runtime(model, "torch", torch.device(DEVICE), precision, cuda_graphs=graphs)
    return Bi3DEngine(model, DEVICE, precision, runtime=chain)


def request_for(workload: str, planes: int) -> Any:
    from app.engine.types import DepthRequest, Mode

    if workload == "binary":
        return DepthRequest(mode=Mode.BINARY, planes=(48.0,))
    if workload == "quantized":
        return DepthRequest(mode=Mode.QUANTIZED, levels=planes)
    return DepthRequest(mode=Mode.CONTINUOUS)


def checks(report: Report, models: dict[str, Any]) -> None:
    """CUDA graphs equal eager; reduced precision agrees with fp32 (masks and disparity)."""
    import numpy as np

    from app.engine.runtimes.cuda_graphs import TorchGraphRuntime
    from app.engine.runtimes.verify import compare_with_torch

    if DEVICE == "cuda":
        import torch

        for kind in ("binary", "continuous_2d"):
            runtime = TorchGraphRuntime(models[kind], torch.device("cuda"), "fp32")
            agreement = compare_with_torch(models[kind], runtime, (192, 288), planes=5)
            report.data["checks"][f"cuda_graphs_vs_eager_{kind}"] = {
                "max_dp": agreement.probabilities,
                "pass": agreement.probabilities < 1e-4,
            }
            report.save()
    left, right = textured_pair(*SIZE)
    subpixel(report, left, right)
    results: dict[str, Any] = {}
    for precision in ("fp32", "bf16", "fp16") if DEVICE == "cuda" else ("fp32", "bf16"):
        binary = make_engine(models["binary"], precision, False).compute(
            left, right, request_for("binary", 1)
        )
        dense = make_engine(models["continuous_2d"], precision, False).compute(
            left, right, request_for("continuous", 65)
        )
        results[precision] = (binary.mask, dense.disparity)
    for precision, (mask, disparity) in results.items():
        if precision == "fp32":
            continue
        agree = float((mask == results["fp32"][0]).mean())
        within = float((np.abs(disparity - results["fp32"][1]) <= 1.0).mean())
        report.data["checks"][f"{precision}_vs_fp32"] = {
            "binary_mask_agreement": agree,
            "disparity_within_1px": within,
            "pass": agree >= 0.995 and within >= 0.99,
        }
        report.save()


def subpixel(report: Report, left: Any, right: Any) -> None:
    """The continuous readout's sub-pixel refinement on this device (its depthwise-convolution
    path off the CPU): from a readout 1.4 px off, it should find the pair's 12 px shift."""
    import torch

    from app.engine.depth.subpixel import refine_subpixel

    device = torch.device(DEVICE)
    lt, rt = (torch.from_numpy(x).to(device) for x in (left, right))
    readout = torch.full(left.shape[:2], 10.6, device=device)
    refine_subpixel(lt, rt, readout)  # warm-up
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    refined = refine_subpixel(lt, rt, readout)
    if device.type == "cuda":
        torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1000
    error = float((refined[:, 40:] - 12.0).abs().median())
    report.data["checks"][f"subpixel_{device.type}"] = {
        "median_error_px": error,
        "ms": ms,
        "pass": error < 0.3,
    }
    report.save()


def timings(report: Report, models: dict[str, Any], start: float) -> None:
    import numpy as np

    from app.engine.bench.plaster import PowerSampler

    left, right = textured_pair(*SIZE)
    precisions = PRECISIONS if DEVICE == "cuda" else ("fp32", "bf16")
    for precision in precisions:
        for graphs in (True, False) if DEVICE == "cuda" else (False,):
            for workload, kind, planes, repeat in WORKLOADS:
                mode = "CUDA graphs" if graphs else "eager"
                label = f"{workload} {planes} planes, {kind}, {precision}, {mode}"
                if time.monotonic() - start > BUDGET_S:
                    report.data["skipped"].append(f"{label}: time budget ({BUDGET_S:.0f} s) used up")
                    continue
                try:
                    engine = make_engine(models[kind], precision, graphs)
                    request = request_for(workload, planes)
                    for _ in range(3):  # cuDNN autotuning, graph capture
                        engine.compute(left, right, request)
                    runs = []
                    with PowerSampler(DEVICE) as power:
                        for _ in range(repeat):
                            runs.append(engine.compute(left, right, request).timings)
                except Exception as exc:  # out of memory, an unsupported precision: record and go on
                    report.data["errors"].append(f"{label}: {type(exc).__name__}: {str(exc)[:300]}")
                    report.save()
                    continue
                network = [r["features"] + r["planes"] + r.get("refine", 0.0) for r in runs]
                total = [r["total"] for r in runs]
                entry = {
                    "workload": workload,
                    "kind": kind,
                    "planes": planes,
                    "precision": precision,
                    "cuda_graphs": graphs,
                    "height": SIZE[0],
                    "width": SIZE[1],
                    "model_width": 1.0 if kind == "light" else WIDTH,
                    "network_median_ms": float(np.median(network)),
                    "network_p90_ms": float(np.percentile(network, 90)),
                    "total_median_ms": float(np.median(total)),
                    "total_p90_ms": float(np.percentile(total, 90)),
                    "stages_median_ms": {k: float(np.median([r[k] for r in runs])) for k in runs[0]},
                    "mean_power_w": power.watts,
                    "goal_ms": GOALS_MS[workload] if precision == "fp16" and kind != "light" else None,
                }
                entry["meets_goal"] = (
                    None if entry["goal_ms"] is None else entry["network_median_ms"] <= entry["goal_ms"]
                )
                report.data["timings"].append(entry)
                report.save()
                del engine
                _free()


def _bundled_light() -> Any:
    """The bundled light model (``resources/models``), or a random one where it is missing."""
    from app.engine.assets import default_weights
    from app.engine.bi3d.checkpoint import load_model
    from app.engine.bi3d.factory import build_model

    weights = default_weights()
    return (load_model(weights)[0] if weights else build_model("light", 1.0)).eval()


def _free() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def main() -> int:
    report = Report(OUT / "gpu_check.json")
    start = time.monotonic()
    try:
        report.data["environment"] = environment()
        stub_missing(report)
        import torch

        report.data["environment"] |= cuda_environment(torch)
        if DEVICE == "cuda" and not torch.cuda.is_available():
            report.data["skipped"].append("everything: torch sees no CUDA device")
            return 0
        from app.engine.bi3d.factory import build_model

        torch.manual_seed(0)
        models = {kind: build_model(kind, WIDTH).eval() for kind in ("binary", "continuous_2d")}
        models["light"] = _bundled_light()
        report.save()
        for name, step in (
            ("checks", lambda: checks(report, models)),
            ("timings", lambda: timings(report, models, start)),
        ):
            try:
                step()
            except Exception:
                report.data["errors"].append(f"{name}: {traceback.format_exc(limit=6)}")
            report.save()
    except BaseException:
        report.data["errors"].append(traceback.format_exc(limit=8))
    finally:
        report.data["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        report.data["seconds"] = round(time.monotonic() - start, 1)
        report.save()
        print(f"wrote {report.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
