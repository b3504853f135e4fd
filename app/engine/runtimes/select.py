"""Choosing runtimes: ``--runtime {auto,torch,onnxruntime,tensorrt}``, with a clear fallback.

A named runtime runs if it can, else the next in the order tensorrt -> onnxruntime -> torch,
with the reason recorded. ``auto`` opens everything this device and precision allow and times
them on the first frame (``RuntimeChain``). Torch always opens, so something always runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import torch

from app.engine.bi3d.model import SweepModel
from app.engine.errors import UserError, setting
from app.engine.runtimes.base import RUNTIMES, Runtime
from app.engine.runtimes.cache import ChoiceStore
from app.engine.runtimes.chain import Opener, RuntimeChain
from app.engine.runtimes.tensorrt_runtime import Report, stderr_report

FALLBACK = ("tensorrt", "onnxruntime", "torch")


def open_runtime(
    model: SweepModel,
    requested: str,
    device: torch.device,
    precision: str,
    cuda_graphs: bool = False,
    report: Report = stderr_report,
    alternatives: tuple[str, ...] = (),
) -> RuntimeChain:
    """The runtime chain for a request; nothing heavy happens until the first frame.

    ``alternatives``: other precisions the request allows (``auto`` precision, where bf16 is
    native but need not be faster: on a CPU with AVX512-BF16 and no AMX, one plane took 41 ms
    in bf16 and 35 ms in fp32). Each runtime that runs ``precision`` is then a candidate at each
    precision it runs, named "torch bf16", "torch fp32", and the chain times them on the first
    frame and caches the decision, as ``auto`` runtime does."""
    if requested not in RUNTIMES:
        raise UserError(f"unknown runtime {requested!r}; use one of {', '.join(RUNTIMES)}")
    if cuda_graphs and device.type != "cuda":
        raise UserError(f"CUDA graphs need {setting('device', 'cuda')}")
    names = list(FALLBACK) if requested == "auto" else list(FALLBACK[FALLBACK.index(requested) :])
    if alternatives and requested != "auto":
        names = names[:1]  # a runtime asked for by name runs if it can: timed against itself only
    openers: list[Opener] = []
    notes: list[str] = []
    for name in names:
        why = unavailable_reason(name, device, precision)
        if why:  # the alternatives are of the runtimes that run the precision asked for (an
            # ONNX export for a slower runtime cost 3 s); one that runs an alternative is said so
            # ("runs fp32 only, not bf16" read as a contradiction beside the fp32 that ran)
            runs = [p for p in alternatives if not unavailable_reason(name, device, p)]
            if runs:
                # (it read "runs fp32 only, not bf16" beside "auto: torch fp32": review)
                why = (
                    f"auto precision compares {precision} and {runs[0]} on the runtimes that run both, "
                    f"and {name} {why} ({setting('precision', runs[0])} times {name} too)"
                )
            notes.append(f"{name} skipped: {why}")
            continue
        for fit in (precision, *(p for p in alternatives if not unavailable_reason(name, device, p))):
            label = f"{name} {fit}" if alternatives else name
            openers.append((label, functools.partial(_OPEN[name], model, device, fit, cuda_graphs, report)))
    if requested != "auto" and not alternatives:
        return RuntimeChain(openers, notes=notes)
    from app.engine.runtimes.onnx_export import model_fingerprint

    mode, fingerprint = "graphs" if cuda_graphs else "eager", model_fingerprint(model)[:24]
    if alternatives:  # the precisions timed, and the runtime asked for (it bounds the candidates)
        key = f"{device}|auto:{'+'.join((precision, *alternatives))}|{mode}|{requested}|{fingerprint}"
    else:  # as earlier versions kept it
        key = f"{device}|{precision}|{mode}|{fingerprint}"
    return RuntimeChain(openers, probe=True, notes=notes, key=key, store=ChoiceStore())


def unavailable_reason(name: str, device: torch.device, precision: str) -> str:
    """Why a runtime cannot run this device and precision at all ("" if it may); cheap checks only."""
    if name == "onnxruntime" and precision != "fp32":
        return f"runs fp32 only, not {precision}"
    if name == "tensorrt":
        if device.type != "cuda":
            return "needs a CUDA device"
        if precision not in ("fp32", "fp16"):
            return f"runs fp32 or fp16 here, not {precision}"
    return ""


def _open_torch(
    model: SweepModel, device: torch.device, precision: str, cuda_graphs: bool, report: Report
) -> Runtime:
    if cuda_graphs:
        from app.engine.runtimes.cuda_graphs import TorchGraphRuntime

        return TorchGraphRuntime(model, device, precision)
    from app.engine.runtimes.torch_runtime import TorchRuntime

    return TorchRuntime(model, device, precision)


def _open_onnxruntime(
    model: SweepModel, device: torch.device, precision: str, cuda_graphs: bool, report: Report
) -> Runtime:
    from app.engine.runtimes.cache import cache_root
    from app.engine.runtimes.onnx_export import export_stages, import_onnx
    from app.engine.runtimes.ort_runtime import OrtRuntime, import_onnxruntime, providers_for
    from app.engine.runtimes.tensorrt_runtime import onnx_files

    ort = import_onnxruntime()
    providers_for(device, list(ort.get_available_providers()))  # says why not before exporting
    import_onnx()
    graphs: dict[str, bytes | Path]
    try:
        graphs = {stage: path for stage, path in onnx_files(model, "fp32", cache_root(), report).items()}
    except OSError:  # no writable cache: export into memory
        graphs = {stage: data for stage, data in export_stages(model).items()}
    return OrtRuntime(graphs, device)


def _open_tensorrt(
    model: SweepModel, device: torch.device, precision: str, cuda_graphs: bool, report: Report
) -> Runtime:
    from app.engine.runtimes.tensorrt_runtime import open_tensorrt

    return open_tensorrt(model, device, precision, report)


_OPEN: dict[str, Callable[[SweepModel, torch.device, str, bool, Report], Runtime]] = {
    "torch": _open_torch,
    "onnxruntime": _open_onnxruntime,
    "tensorrt": _open_tensorrt,
}
