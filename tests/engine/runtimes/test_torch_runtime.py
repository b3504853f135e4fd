"""The torch runtime under autocast keeps its convolutions' weights in the autocast dtype:
the same answers as casting them at every call, and the caller's model left in fp32."""

from __future__ import annotations

import pytest
import torch

from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.padding import Padder
from app.engine.runtimes.torch_runtime import TorchRuntime, precision_context

CPU = torch.device("cpu")


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_autocast_weights_answer_as_autocast_does(precision: str) -> None:
    torch.manual_seed(0)
    model = LightBi3D(width=0.5).eval()
    rng = torch.Generator().manual_seed(1)
    left, right = (torch.randint(0, 256, (96, 192, 3), dtype=torch.uint8, generator=rng) for _ in range(2))
    padder = Padder(96, 192, minimum=model.min_size)
    l_in, r_in = padder.network_pair(left.numpy(), right.numpy(), CPU, channels_last=True)
    shifts = torch.tensor([4.0, 7.5, 20.0])
    runtime = TorchRuntime(model, CPU, precision)
    with torch.inference_mode(), precision_context(CPU, precision):
        feats = model.extract(l_in, r_in)
        expected = model.refine_planes(feats, model.plane_logits(feats, shifts, chunk=3))
        feats = runtime.features(l_in, r_in)
        got = runtime.refine_planes(feats, runtime.planes(feats, shifts))
    assert torch.equal(got, expected)
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the caller's model stays fp32
    conv = runtime.model.segnet.down1[0]
    assert conv.weight.dtype == (torch.bfloat16 if precision == "bf16" else torch.float32)
