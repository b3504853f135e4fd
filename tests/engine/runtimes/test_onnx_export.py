"""ONNX export: one file per stage, dynamic sizes and plane counts, metadata, and onnxruntime
matching torch within 1e-4 on probabilities (fp32)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from app.engine.bi3d.factory import build_model
from app.engine.bi3d.model import SweepModel
from app.engine.depth.bi3d import Bi3DEngine
from app.engine.depth.readout import feats_guide
from app.engine.runtimes.base import RuntimeUnavailable
from app.engine.runtimes.graphs import shifted_columns
from app.engine.runtimes.onnx_export import check_onnx, export_stages, read_metadata, write_onnx
from app.engine.runtimes.ort_runtime import OrtRuntime
from app.engine.runtimes.verify import FP32_TOLERANCE, compare_with_torch
from app.engine.types import DepthRequest, Mode

CPU = torch.device("cpu")
WIDTHS = {"binary": 0.25, "continuous_2d": 0.25, "continuous_3d": 0.25, "light": 1.0}


def _model(kind: str) -> SweepModel:
    torch.manual_seed(0)
    return build_model(kind, WIDTHS[kind]).eval()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[SweepModel, Path]]:
    out = {}
    for kind in ("binary", "light"):
        model = _model(kind)
        folder = tmp_path_factory.mktemp(kind)
        write_onnx(model, folder)
        out[kind] = (model, folder)
    return out


def test_shifted_columns_reproduce_the_published_volume() -> None:
    from app.engine.bi3d.model import plane_sweep_volume

    left, right = torch.randn(1, 4, 3, 10), torch.randn(1, 4, 3, 10)
    shifts = torch.tensor([0.0, 2.0, 3.5, 6.0])
    want = plane_sweep_volume(left, right, shifts, 6)[:, :, 4:]
    torch.testing.assert_close(shifted_columns(right, shifts, 6), want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", ["binary", "light"])
def test_files_per_stage_carry_metadata(kind: str, exported) -> None:  # type: ignore[no-untyped-def]
    _, folder = exported[kind]
    assert sorted(p.name for p in folder.glob("*.onnx")) == ["featnet.onnx", "refine.onnx", "segnet.onnx"]
    meta = read_metadata(folder / "segnet.onnx")
    assert meta["kind"] == kind and meta["stage"] == "segnet" and meta["max_disparity"] == "192"
    assert meta["width"] == f"{WIDTHS[kind]:g}" and "0.5" in meta["normalisation"]
    graph = onnx.load(str(folder / "segnet.onnx")).graph
    shifts = next(i for i in graph.input if i.name == "shifts")
    assert shifts.type.tensor_type.shape.dim[0].dim_param == "planes"
    left = onnx.load(str(folder / "featnet.onnx")).graph.input[0]
    assert [d.dim_param for d in left.type.tensor_type.shape.dim] == ["batch", "", "height", "width"]
    if kind == "binary":
        outputs = [o.name for o in onnx.load(str(folder / "featnet.onnx")).graph.output]
        assert outputs == ["feat_left", "feat_right", "left_hr"]  # FeatNet plus FeatNetHR
    # every declared output dimension is a size or a name the stage gives it (ONNX's inference
    # named the light feature net's left_pad channels 'sweep_width', its unit vectors' 'Div...')
    declared = {"batch", "height", "width", "grid_height", "grid_width", "sweep_width", "half_height"}
    declared |= {"half_width", "planes", "out_height", "out_width"}
    for stage in ("featnet", "segnet", "refine"):
        for value in onnx.load(str(folder / f"{stage}.onnx")).graph.output:
            dims = value.type.tensor_type.shape.dim
            assert all(d.dim_value > 0 or d.dim_param in declared for d in dims), (stage, value.name)
            assert dims[1].dim_value > 0 or dims[1].dim_param == "planes", (stage, value.name)  # channels


@pytest.mark.parametrize("kind", ["binary", "light"])
@pytest.mark.parametrize(("size", "planes"), [((192, 288), 1), ((288, 384), 7)])
def test_onnxruntime_matches_torch(kind: str, size: tuple[int, int], planes: int, exported) -> None:  # type: ignore[no-untyped-def]
    model, folder = exported[kind]
    runtime = OrtRuntime.from_directory(folder, model, CPU)
    agreement = compare_with_torch(model, runtime, size, planes)
    assert agreement.probabilities < FP32_TOLERANCE
    assert agreement.lowres_logits < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["continuous_2d", "continuous_3d"])
def test_continuous_stages_match_torch(kind: str) -> None:
    model = _model(kind)
    runtime = OrtRuntime(dict(export_stages(model)), CPU)
    assert "disprefine" in runtime.stage_inputs
    assert compare_with_torch(model, runtime, (192, 288), 3).probabilities < FP32_TOLERANCE
    left = torch.rand(1, 3, 192, 288) * 2 - 1
    normalized = torch.rand(1, 1, 192, 288)
    with torch.inference_mode():
        feats = runtime.features(left, left)
        got = runtime.refine_disparity(feats, normalized)
        want = model.refine_disparity(normalized, left)
        torch.testing.assert_close(got, want, rtol=0, atol=1e-4)
        if kind == "continuous_3d":
            lowres = torch.randn(1, 17, 64, 96)
            reg = runtime.regularise(feats, lowres)
            torch.testing.assert_close(
                reg, model.regularise(model.extract(left, left), lowres), rtol=0, atol=1e-4
            )


def test_an_onnx_file_of_another_kind_is_refused(exported) -> None:  # type: ignore[no-untyped-def]
    _, folder = exported["binary"]
    light, _ = exported["light"]
    with pytest.raises(RuntimeUnavailable, match="binary model's featnet stage"):
        check_onnx(folder / "featnet.onnx", light, "featnet")
    other = _model("binary")
    with torch.no_grad():
        other.segnet.last_conv.bias.add_(1.0)
    with pytest.raises(RuntimeUnavailable, match="other weights"):
        OrtRuntime.from_directory(folder, other, CPU)


def test_fp16_graphs_hold_fp16_weights_and_keep_fp32_shifts() -> None:
    graphs = export_stages(_model("binary"), "fp16")
    segnet = onnx.load_from_string(graphs["segnet"])
    types = {i.name: i.type.tensor_type.elem_type for i in segnet.graph.input}
    assert types["feat_left"] == onnx.TensorProto.FLOAT16 and types["shifts"] == onnx.TensorProto.FLOAT
    weights = [t for t in segnet.graph.initializer if len(t.dims) == 4]
    assert weights and all(t.data_type == onnx.TensorProto.FLOAT16 for t in weights)
    assert read_metadata_from(graphs["segnet"])["precision"] == "fp16"


def read_metadata_from(data: bytes) -> dict[str, str]:
    return {p.key: p.value for p in onnx.load_from_string(data).metadata_props}


def test_export_leaves_the_model_untouched() -> None:
    model = _model("light")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    export_stages(model, "fp16")
    after = model.state_dict()
    assert all(after[k].dtype == torch.float32 and torch.equal(after[k], v) for k, v in before.items())
    assert np.isfinite(float(sum(v.float().sum() for v in after.values())))


def test_a_foreign_file_in_the_cache_is_exported_again(exported, cache: Path) -> None:  # type: ignore[no-untyped-def]
    from app.engine.runtimes.tensorrt_runtime import onnx_files

    model, _ = exported["binary"]
    _, light_folder = exported["light"]
    messages: list[str] = []
    paths = onnx_files(model, "fp32", cache, messages.append)
    paths["segnet"].write_bytes((light_folder / "segnet.onnx").read_bytes())  # someone else's file
    again = onnx_files(model, "fp32", cache, messages.append)
    assert len(messages) == 1 and "is a light model's segnet stage" in messages[0]
    assert messages[0].endswith("exporting again")
    check_onnx(again["segnet"], model, "segnet")  # replaced by the right one


def test_execution_providers_per_device() -> None:
    from app.engine.runtimes.ort_runtime import providers_for

    cuda = torch.device("cuda")
    assert providers_for(torch.device("cpu"), ["CUDAExecutionProvider"]) == ["CPUExecutionProvider"]
    got = providers_for(cuda, ["CPUExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider"])
    assert got == ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    with pytest.raises(RuntimeUnavailable, match="pip uninstall -y onnxruntime onnxruntime-gpu"):
        providers_for(cuda, ["CPUExecutionProvider"])  # the CPU package, or both installed


def test_light_continuous_depth_on_onnxruntime_reads_the_grid_as_torch_does(exported) -> None:  # type: ignore[no-untyped-def]
    # the exported feature stage hands its upsampling weights over by name: the engine finds
    # them there and reads the curves on the model's grid, as on torch (before, it upsampled
    # the whole volume and answered up to 30 px apart from torch at a few edge pixels)
    model, folder = exported["light"]
    runtime = OrtRuntime.from_directory(folder, model, CPU)
    rng = np.random.default_rng(3)
    left = rng.integers(0, 255, (192, 288, 3), dtype=np.uint8)
    right = np.roll(left, -9, axis=1)
    with torch.inference_mode():
        image = torch.rand(1, 3, 192, 288) * 2 - 1
        assert feats_guide(runtime.features(image, image)) is not None
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)
    on_ort = Bi3DEngine(model, runtime=runtime).compute(left, right, request)
    on_torch = Bi3DEngine(model).compute(left, right, request)
    assert on_ort.runtime == "onnxruntime" and on_torch.runtime == "torch"
    np.testing.assert_allclose(on_ort.disparity, on_torch.disparity, atol=0.05)
    np.testing.assert_allclose(on_ort.probabilities, on_torch.probabilities, atol=1e-3)
