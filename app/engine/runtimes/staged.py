"""Runtimes that execute the exported stage graphs (ONNX Runtime, TensorRT, CUDA graphs).

A subclass says how to run one stage on a dict of named tensors; this class maps the engine's
calls onto the stages of ``graphs.stages``. Shapes as in ``runtimes.base``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from app.engine.runtimes.base import RuntimeFailed


@dataclass
class GraphFeatures:
    """A frame's named tensors: ``left``, ``right`` and every ``featnet`` output."""

    image: Tensor  # B x 3 x H x W normalised left image
    tensors: dict[str, Tensor] = field(default_factory=dict)


class StagedRuntime:
    """Features, planes and readouts through named stages; subclasses implement ``_run``."""

    name = "staged"
    reason = ""
    max_planes: int | None = None  # the most planes one ``planes`` call takes (None: any)

    def __init__(
        self, device: torch.device, precision: str, stage_inputs: dict[str, tuple[str, ...]]
    ) -> None:
        self.device = device.type
        self._device = device
        self.precision = precision
        self.stage_inputs = stage_inputs
        missing = {"featnet", "segnet", "refine"} - set(stage_inputs)
        if missing:
            raise RuntimeFailed(f"{self.name}: stages {', '.join(sorted(missing))} are missing")

    # ---- to implement ---------------------------------------------------------------
    def _run(self, stage: str, feeds: dict[str, Tensor]) -> dict[str, Tensor]:
        """Run one stage; feeds and results are tensors on ``self._device``."""
        raise NotImplementedError

    # ---- the runtime interface ------------------------------------------------------
    def features(self, left: Tensor, right: Tensor) -> GraphFeatures:
        frame = {"left": left, "right": right}
        frame.update(self._run("featnet", self._feeds("featnet", frame)))
        return GraphFeatures(left, frame)

    def planes(self, feats: Any, shifts: Tensor) -> Tensor:
        frame = dict(_tensors(feats))
        frame["shifts"] = shifts.to(self._device, torch.float32)
        return self._first(self._run("segnet", self._feeds("segnet", frame)))

    def refine_planes(self, feats: Any, lowres: Tensor) -> Tensor:
        frame = dict(_tensors(feats))
        frame["lowres"] = lowres
        return self._first(self._run("refine", self._feeds("refine", frame)))

    def regularise(self, feats: Any, lowres: Tensor) -> Tensor:
        if "regularise" not in self.stage_inputs:
            return lowres
        frame = dict(_tensors(feats))
        frame["lowres"] = lowres
        return self._first(self._run("regularise", self._feeds("regularise", frame)))

    def refine_disparity(self, feats: Any, normalized: Tensor) -> Tensor:
        if "disprefine" not in self.stage_inputs:
            raise TypeError("this model has no DispRefine")
        frame = dict(_tensors(feats))
        frame["normalized"] = normalized
        return self._first(self._run("disprefine", self._feeds("disprefine", frame)))

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def describe(self) -> str:
        return f"{self.name} on {self.device}, {self.precision}"

    # ---- helpers ----------------------------------------------------------------------
    def _feeds(self, stage: str, frame: dict[str, Tensor]) -> dict[str, Tensor]:
        try:
            return {name: frame[name] for name in self.stage_inputs[stage]}
        except KeyError as exc:
            raise RuntimeFailed(
                f"{self.name}: stage {stage} needs {exc.args[0]!r}, not produced here"
            ) from None

    @staticmethod
    def _first(outputs: dict[str, Tensor]) -> Tensor:
        return next(iter(outputs.values()))


def _tensors(feats: Any) -> dict[str, Tensor]:
    if not isinstance(feats, GraphFeatures):
        raise TypeError(f"features from another runtime ({type(feats).__name__}) cannot be used here")
    return feats.tensors
