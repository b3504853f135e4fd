"""Choosing a flow backend by name: ``auto``, ``nvof``, ``dis`` or ``farneback``."""

from __future__ import annotations

from typing import Any

from app.engine.errors import UserError, setting
from app.engine.flow.base import BACKENDS, DIS_PRESETS, NVOF_PRESETS, FlowBackend, FlowOptions
from app.engine.flow.cpu import DisFlow, FarnebackFlow
from app.engine.flow.nvof import NvofFlow, nvof_probe, probe_nvof


def resolve_backend(name: str) -> str:
    """The backend ``name`` stands for: ``auto`` is ``nvof`` when its start-up probe passes, else ``dis``."""
    if name != "auto":
        return name
    return "nvof" if nvof_probe().available else "dis"


def create_flow_backend(
    name: str, options: FlowOptions | None = None, cv: Any = None
) -> tuple[FlowBackend, str]:
    """The backend called ``name`` and one line saying what runs and why.

    ``auto`` uses the start-up probe (or probes ``cv`` when one is given) and falls back to ``dis``.
    """
    opts = options or FlowOptions()
    if name not in BACKENDS:
        raise UserError(f"unknown flow backend {name!r}; use one of: {', '.join(BACKENDS)}")
    if name in ("auto", "nvof"):
        probe = nvof_probe() if cv is None and opts.gpu_id == 0 else probe_nvof(cv, opts.gpu_id)
        if probe.available:
            return NvofFlow(opts, cv), f"NVIDIA Optical Flow Accelerator on {probe.reason}"
        if name == "nvof":
            raise UserError(
                f"nvof is not available: {probe.reason}; use {setting('flow', 'dis')} or farneback"
            )
        preset, said = opts.preset, ""
        if preset in NVOF_PRESETS and preset not in DIS_PRESETS:  # a GPU machine's script ran here
            preset, said = "medium", f"; its preset {opts.preset!r} is nvof's: dis runs 'medium', its slowest"
        else:
            preset = opts.preset_for("dis")
        return DisFlow(preset or "fast"), f"nvof unavailable: {probe.reason}{said}"
    if name == "dis":
        return DisFlow(opts.preset_for("dis") or "fast"), "OpenCV DIS on the CPU"
    opts.preset_for("farneback")
    return FarnebackFlow(), "OpenCV Farneback on the CPU"


def create_flow(name: str, options: FlowOptions | None = None, cv: Any = None) -> FlowBackend:
    """``create_flow_backend`` with the reason line kept on the backend as ``status``."""
    backend, reason = create_flow_backend(name, options, cv)
    backend.status = reason
    return backend


def parse_backend_spec(spec: str) -> tuple[str, FlowOptions]:
    """'dis', 'dis:ultrafast' or 'nvof:fast:4' (backend[:preset[:grid]]) -> (name, options)."""
    name, *rest = spec.strip().split(":")
    if name not in BACKENDS:
        raise UserError(f"unknown flow backend {name!r}; use one of: {', '.join(BACKENDS)}")
    preset = rest[0] if rest and rest[0] else None
    try:
        grid = int(rest[1]) if len(rest) > 1 else 1
    except ValueError:
        raise UserError(f"bad flow grid in {spec!r}; write e.g. nvof:fast:4") from None
    options = FlowOptions(preset=preset, grid=grid)
    if name != "auto":
        options.preset_for(name)
    return name, options
