"""CUDA graphs for the torch runtime: each stage captured once per input shape and replayed.

A live stream keeps one frame size and a few plane counts, so launch overhead (hundreds of
small kernels per plane batch) is paid once. A plane batch is split into power-of-two buckets
(9 planes: 8 + 1), so a handful of graphs per size covers every count with no padded planes;
the engine's batches are at most ``max_planes`` = 8. The plane-sweep volume is built inside
the graph from a shift tensor (``graphs.shifted_columns``), so new plane positions need no new
capture.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from app.engine.bi3d.model import SweepModel, to_channels_last
from app.engine.runtimes.graphs import Stage, stages
from app.engine.runtimes.staged import StagedRuntime
from app.engine.runtimes.torch_runtime import out_of_memory_fails, precision_context


def plane_buckets(count: int) -> list[int]:
    """``count`` planes as power-of-two batches, largest first: 13 -> [8, 4, 1]."""
    if count < 1:
        raise ValueError("plane count must be at least 1")
    return [1 << bit for bit in range(count.bit_length() - 1, -1, -1) if count & (1 << bit)]


@dataclass
class Captured:
    """A replayable graph with its static input and output tensors."""

    replay: Callable[[], None]
    inputs: list[Tensor]
    outputs: tuple[Tensor, ...]


Capture = Callable[[nn.Module, list[Tensor]], Captured]


def capture_cuda(module: nn.Module, inputs: list[Tensor]) -> Captured:
    """Warm up on a side stream (cuDNN picks its algorithms), then capture one call."""
    static = [t.clone() for t in inputs]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            module(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = module(*static)
    outputs = out if isinstance(out, tuple) else (out,)
    return Captured(graph.replay, static, outputs)


class GraphCache:
    """Captured graphs keyed by stage, input shapes and dtypes; least recently used dropped first."""

    def __init__(self, capture: Capture = capture_cuda, limit: int = 24) -> None:
        self.capture = capture
        self.limit = limit
        self.graphs: OrderedDict[tuple[Any, ...], Captured] = OrderedDict()
        self.captures = 0

    def run(self, stage: str, module: nn.Module, inputs: list[Tensor]) -> tuple[Tensor, ...]:
        key = (stage, *((tuple(t.shape), t.dtype) for t in inputs))
        graph = self.graphs.get(key)
        if graph is None:
            graph = self.capture(module, inputs)
            self.captures += 1
            self.graphs[key] = graph
            while len(self.graphs) > self.limit:
                self.graphs.popitem(last=False)
        else:
            self.graphs.move_to_end(key)
            for static, new in zip(graph.inputs, inputs, strict=True):
                static.copy_(new)
        graph.replay()
        return tuple(t.clone() for t in graph.outputs)


class TorchGraphRuntime(StagedRuntime):
    """The torch runtime with every stage replayed from a CUDA graph (or another capture)."""

    name = "torch"
    max_planes: int | None = 8

    def __init__(
        self, model: SweepModel, device: torch.device, precision: str = "fp32", capture: Capture | None = None
    ) -> None:
        self.model = model.to(device).eval()
        to_channels_last(self.model)
        self.stages: dict[str, Stage] = {s.name: s for s in stages(self.model)}
        super().__init__(device, precision, {name: s.inputs for name, s in self.stages.items()})
        self.cache = GraphCache(capture or capture_cuda)

    def planes(self, feats: Any, shifts: Tensor) -> Tensor:
        parts, start = [], 0
        for size in plane_buckets(shifts.numel()):
            parts.append(super().planes(feats, shifts[start : start + size]))
            start += size
        return torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]

    def _run(self, stage: str, feeds: dict[str, Tensor]) -> dict[str, Tensor]:
        spec = self.stages[stage]
        inputs = [feeds[name] for name in spec.inputs]
        with out_of_memory_fails(self.name):
            outputs = self.cache.run(stage, spec.module, inputs)
        return dict(zip(spec.outputs, outputs, strict=True))

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return precision_context(self._device, self.precision, cache=False)

    def describe(self) -> str:
        return f"torch on {self.device}, {self.precision}, CUDA graphs ({self.cache.captures} captured)"
