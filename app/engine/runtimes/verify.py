"""Checking a runtime against the torch model: same frame, same planes, probabilities compared.

Used by ``bi3d-studio export`` after writing files and by the tests (fp32 tolerance 1e-4).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from app.engine.bi3d.model import SweepModel
from app.engine.runtimes.base import Runtime
from app.engine.runtimes.torch_runtime import TorchRuntime

FP32_TOLERANCE = 1e-4


@dataclass(frozen=True)
class Agreement:
    """Largest absolute differences between a runtime and torch on one frame."""

    probabilities: float  # sigmoid of the full-resolution plane logits
    lowres_logits: float
    planes: int
    size: tuple[int, int]

    def line(self, name: str) -> str:
        h, w = self.size
        return (
            f"{name} vs torch at {h}x{w}, {self.planes} planes: max |dp| = {self.probabilities:.1e} "
            f"(low-resolution logits {self.lowres_logits:.1e})"
        )


def example_pair(size: tuple[int, int], device: torch.device, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """A textured normalised pair (B x 3 x H x W) whose right image is the left shifted by 6 px."""
    gen = torch.Generator().manual_seed(seed)
    left = torch.rand(1, 3, *size, generator=gen) * 2 - 1
    return left.to(device), left.roll(-6, 3).to(device)


def compare_with_torch(
    model: SweepModel, runtime: Runtime, size: tuple[int, int] = (192, 288), planes: int = 5
) -> Agreement:
    """Run ``runtime`` and the eager torch model on the same frame and planes (whole and half shifts)."""
    device = next(model.parameters()).device
    reference = TorchRuntime(model, device, "fp32")
    left, right = example_pair(size, device)
    shifts = torch.linspace(0, min(model.max_shift, 2 * planes), planes).round() / 2
    with torch.inference_mode():
        lows, probs = [], []
        for rt in (reference, runtime):
            with rt.context():
                feats = rt.features(left, right)
                low = rt.planes(feats, shifts).float()
                probs.append(torch.sigmoid(rt.refine_planes(feats, low).float()).cpu())
                lows.append(low.cpu())
    return Agreement(
        probabilities=float((probs[0] - probs[1]).abs().max()),
        lowres_logits=float((lows[0] - lows[1]).abs().max()),
        planes=planes,
        size=size,
    )
