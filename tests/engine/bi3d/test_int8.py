"""int8 SegNet (``--precision int8``): close to fp32, deterministic, tied to its weights, and
its calibration files read safely."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from app.engine.assets import default_weights
from app.engine.bi3d import int8
from app.engine.bi3d.checkpoint import load_model, save_checkpoint
from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.model import Bi3DModel
from app.engine.bi3d.padding import to_network_input
from app.engine.depth.bi3d import Bi3DEngine, resolve_precision
from app.engine.errors import UserError
from app.engine.synthetic.layered import SceneConfig, render_scene, to_uint8
from app.engine.types import DepthRequest, Mode

pytestmark = pytest.mark.skipif(int8.quantized_engine() is None, reason="torch without oneDNN int8")


@pytest.fixture(scope="module")
def calibrated() -> tuple[LightBi3D, int8.Int8Calibration]:
    torch.manual_seed(0)
    model = LightBi3D(width=0.5, max_disparity=96).eval()
    return model, int8.calibrate(model, int8.calibration_pairs(2, 96, 160))


def _volume(model: LightBi3D, planes: int = 3) -> torch.Tensor:
    """Planes of a synthetic scene the calibration has not seen."""
    sample = render_scene(12345, SceneConfig(height=96, width=192, max_disparity=48))
    left, right = (to_network_input(to_uint8(t), torch.device("cpu")) for t in (sample.left, sample.right))
    with torch.inference_mode():
        feats = model.extract(left, right)
        terms = model.plane_terms(feats)
        return terms.volumes([0.0, 3.0, 4.5][:planes])


def test_int8_body_is_close_to_fp32_and_deterministic(calibrated) -> None:  # type: ignore[no-untyped-def]
    model, calibration = calibrated
    seg = model.segnet
    features, body = int8.quantized_parts(model, calibration)
    x = _volume(model)
    keep = x.shape[-1] - 20
    with torch.inference_mode():
        ref = seg.body(x, keep)
        got = body(x, keep)
        again = body(x, keep)
    assert got.shape == ref.shape and got.dtype == torch.float32
    assert torch.equal(got, again)  # the ranges are fixed: the same input, the same answer
    # quantization noise, not another answer (measured: 0.95 and 1.0 here; the bundled model on
    # the same scene 0.98 and 0.98; a wrong scale or layer breaks both)
    assert float(np.corrcoef(got.flatten().numpy(), ref.flatten().numpy())[0, 1]) > 0.9
    sure = ref.abs() > 1
    assert float(((got[sure] > 0) == (ref[sure] > 0)).float().mean()) > 0.97
    # the feature stem: 8-bit images in, so close to fp32
    sample = render_scene(54321, SceneConfig(height=96, width=192, max_disparity=48))
    image = to_network_input(to_uint8(sample.left), torch.device("cpu")).contiguous(
        memory_format=torch.channels_last
    )
    with torch.inference_mode():
        want = model.featnet.block(model.featnet.stem(image))
        have = features(image)
    assert torch.equal(have, features(image))
    assert float(np.corrcoef(have.flatten().numpy(), want.flatten().numpy())[0, 1]) > 0.99


def test_int8_model_is_a_copy_and_the_engine_runs_it(calibrated) -> None:  # type: ignore[no-untyped-def]
    model, calibration = calibrated
    model.int8_calibration = calibration
    keys = set(model.state_dict())
    engine = Bi3DEngine(model, precision="int8")
    assert engine.precision == "int8" and model.segnet.quantized is None  # the model given is unchanged
    assert set(model.state_dict()) == keys  # the int8 body is no submodule
    left = (np.random.default_rng(0).random((96, 160, 3)) * 255).astype(np.uint8)
    right = np.roll(left, -6, axis=1)
    request = DepthRequest(mode=Mode.QUANTIZED, levels=4, max_disparity=48)
    first = engine.compute(left, right, request)
    second = engine.compute(left, right, request)
    assert first.precision == "int8"
    runtime_model = engine.backend.current.model  # the runtime's copy runs int8
    assert runtime_model.segnet.quantized is not None and runtime_model.featnet.quantized is not None
    assert model.featnet.quantized is None
    assert np.array_equal(first.disparity, second.disparity, equal_nan=True)
    reference = Bi3DEngine(model, precision="fp32").compute(left, right, request)
    assert np.mean(first.disparity == reference.disparity) > 0.9


def test_calibration_round_trips_and_belongs_to_its_weights(tmp_path: Path, calibrated) -> None:  # type: ignore[no-untyped-def]
    model, calibration = calibrated
    path = tmp_path / "model.int8.json"
    int8.write_calibration(path, calibration)
    back = int8.read_calibration(path)
    assert back.qparams == calibration.qparams and back.digest == calibration.digest
    other = LightBi3D(width=0.5, max_disparity=96)
    with pytest.raises(UserError, match="other weights"):
        int8.quantized_parts(other, calibration)
    with pytest.raises(UserError, match="graph"):
        int8.quantized_parts(model, int8.Int8Calibration(calibration.digest, {"segnet/x": (1.0, 0)}))


_HEAD = {"format": int8.FORMAT, "version": 2, "weights_sha256": "x"}


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        json.dumps({"format": "something else"}),
        json.dumps({**_HEAD, "activations": {"a": [float("nan"), 0]}}),
        json.dumps({**_HEAD, "activations": {"a": [0.1, 300]}}),
        json.dumps({"format": int8.FORMAT, "version": 2, "activations": {}}),
        json.dumps({"format": int8.FORMAT, "version": 1, "weights_sha256": "x", "activations": {}}),
        json.dumps([1, 2]),
    ],
)
def test_a_damaged_calibration_is_one_line_and_ignored_on_load(tmp_path: Path, text: str, calibrated) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "model.int8.json"
    path.write_text(text)
    with pytest.raises(UserError, match="int8 calibration") as info:
        int8.read_calibration(path)
    assert "\n" not in str(info.value)
    model, _ = calibrated
    weights = tmp_path / "model.pt"
    save_checkpoint(weights, model)
    loaded, _ = load_model(weights)  # a note on stderr; the weights still load
    assert getattr(loaded, "int8_calibration", None) is None


def test_load_model_attaches_the_calibration_beside_the_weights(tmp_path: Path, calibrated) -> None:  # type: ignore[no-untyped-def]
    model, calibration = calibrated
    weights = tmp_path / "model.pt"
    save_checkpoint(weights, model)
    int8.write_calibration(int8.calibration_path(weights), calibration)
    loaded, _ = load_model(weights)
    assert loaded.int8_calibration.qparams == calibration.qparams
    # a calibration of other weights is not used
    save_checkpoint(weights, LightBi3D(width=0.5, max_disparity=96))
    assert getattr(load_model(weights)[0], "int8_calibration", None) is None


def test_the_bundled_model_ships_its_own_calibration() -> None:
    # a retrained bundle needs `python benchmarks/calibrate_int8.py` again, or auto falls back to fp32
    weights = default_weights()
    assert weights is not None
    model, _ = load_model(weights)
    assert isinstance(model.int8_calibration, int8.Int8Calibration)
    int8.quantized_parts(model, model.int8_calibration)  # fits this torch's graph


def test_int8_is_asked_for_by_name_only(monkeypatch, calibrated) -> None:  # type: ignore[no-untyped-def]
    from app.engine.depth import bi3d as engine_module

    model, calibration = calibrated
    model.int8_calibration = calibration
    monkeypatch.setattr(engine_module, "cpu_has_native_bf16", lambda: False)
    assert resolve_precision("auto", torch.device("cpu"), model) == "fp32"  # less accurate: not a default
    assert resolve_precision("int8", torch.device("cpu"), model) == "int8"


def test_int8_where_it_cannot_run_says_so(calibrated) -> None:  # type: ignore[no-untyped-def]
    model, _ = calibrated
    assert "CPU only" in int8.int8_unavailable(model, torch.device("cuda"))
    with pytest.raises(UserError, match="light model"):
        Bi3DEngine(Bi3DModel("binary", width=0.25), precision="int8")
