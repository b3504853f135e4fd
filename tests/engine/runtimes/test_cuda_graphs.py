"""CUDA graphs: plane buckets and the capture cache (on the CPU with an eager stand-in for the
capture), then the real thing and reduced precision on a GPU (``gpu`` marker)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from app.engine.bi3d.factory import build_model
from app.engine.depth.bi3d import Bi3DEngine
from app.engine.runtimes.cuda_graphs import Captured, GraphCache, TorchGraphRuntime, plane_buckets
from app.engine.runtimes.select import open_runtime
from app.engine.runtimes.verify import FP32_TOLERANCE, compare_with_torch
from app.engine.types import DepthRequest, Mode


def eager_capture(module: nn.Module, inputs: list[Tensor]) -> Captured:
    """Same contract as a CUDA graph: static inputs, outputs rewritten in place on replay."""
    static = [t.clone() for t in inputs]
    first = module(*static)
    outputs = first if isinstance(first, tuple) else (first,)

    def replay() -> None:
        new = module(*static)
        for out, value in zip(outputs, new if isinstance(new, tuple) else (new,), strict=True):
            out.copy_(value)

    return Captured(replay, static, outputs)


def test_plane_batches_split_into_powers_of_two() -> None:
    assert [plane_buckets(n) for n in (1, 3, 8, 9, 13)] == [[1], [2, 1], [8], [8, 1], [8, 4, 1]]
    with pytest.raises(ValueError):
        plane_buckets(0)


def test_cache_captures_once_per_shape_and_replays_new_inputs() -> None:
    cache = GraphCache(eager_capture, limit=2)
    double = nn.Identity()
    for value in (1.0, 2.0, 3.0):
        (out,) = cache.run("s", double, [torch.full((2, 3), value)])
        assert torch.equal(out, torch.full((2, 3), value))
    assert cache.captures == 1
    cache.run("s", double, [torch.zeros(4)])
    cache.run("t", double, [torch.zeros(4)])
    assert cache.captures == 3 and len(cache.graphs) == 2  # least recently used dropped


@pytest.mark.parametrize(("kind", "width"), [("binary", 0.25), ("light", 1.0)])
def test_staged_graphs_match_the_eager_model(kind: str, width: float) -> None:
    torch.manual_seed(0)
    model = build_model(kind, width).eval()
    runtime = TorchGraphRuntime(model, torch.device("cpu"), capture=eager_capture)
    assert compare_with_torch(model, runtime, (192, 288), planes=3).probabilities < FP32_TOLERANCE
    segnet = [k[-1][0] for k in runtime.cache.graphs if k[0] == "segnet"]  # the shifts' shapes
    assert sorted(segnet) == [(1,), (2,)]  # 3 planes ran as 2 + 1
    compare_with_torch(model, runtime, (192, 288), planes=2)  # reuses the 2-plane capture
    assert sum(k[0] == "segnet" for k in runtime.cache.graphs) == 2


# ---- on a GPU ----------------------------------------------------------------------------------
def _pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    left = rng.integers(0, 255, (288, 480, 3), dtype=np.uint8)
    left = np.repeat(np.repeat(left[::4, ::4], 4, 0), 4, 1)[:288, :480]  # blobs, not pixel noise
    return left, np.roll(left, -12, axis=1)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["binary", "light"])
def test_cuda_graphs_match_eager_cuda(kind: str) -> None:
    torch.manual_seed(0)
    model = build_model(kind, 0.5 if kind == "binary" else 1.0).eval()
    runtime = TorchGraphRuntime(model, torch.device("cuda"))
    assert compare_with_torch(model, runtime, (192, 288), planes=5).probabilities < 1e-3


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_reduced_precision_agrees_with_fp32(precision: str) -> None:
    """Binary masks agree on 99.5 % of pixels, disparity within 1 px on 99 %."""
    torch.manual_seed(0)
    model = build_model("continuous_2d", 1.0).eval()
    cuda = torch.device("cuda")
    left, right = _pair()
    results = {}
    for p in ("fp32", precision):
        engine = Bi3DEngine(model, "cuda", p, runtime=open_runtime(model, "torch", cuda, p))
        binary = engine.compute(left, right, DepthRequest(mode=Mode.BINARY, planes=(24,)))
        dense = engine.compute(left, right, DepthRequest(mode=Mode.CONTINUOUS))
        results[p] = (binary.mask, dense.disparity)
    (mask32, disp32), (mask16, disp16) = results["fp32"], results[precision]
    assert mask32 is not None and mask16 is not None
    assert (mask32 == mask16).mean() >= 0.995
    assert (np.abs(disp32 - disp16) <= 1.0).mean() >= 0.99
