"""The light model's convolutions in int8 on a CPU: ``--precision int8``.

A plane's classification (``LightSegNet.body``, 14 convolutions from 1/3 to 1/48 resolution and
back) is most of a frame's convolution time, and it is the part a sweep repeats for every plane.
Its convolutions run here as oneDNN int8 kernels (per-channel weights, per-tensor activations,
the VNNI instructions where the CPU has them, AVX2 elsewhere); the features, the matching terms
of the plane-sweep volume, the output layer (logits, which the readouts interpolate) and every
later stage stay fp32. Measured here (2-core Xeon, 16 planes at 480 x 640): the SegNet body 89
against 33 ms, 92 against 47 ms with oneDNN capped at AVX2 (``ONEDNN_MAX_CPU_ISA=AVX2``).

Activations are quantized with ranges measured once per model (``calibrate``) on synthetic
training-stream scenes (seeds from ``CALIBRATION_SEED``, never a held-out or demo scene) and
kept beside the weights (``calibration_path``: ``bi3d_default.int8.json`` for the bundled
model); weights given without one are calibrated when first loaded in int8 (a few seconds).
The ranges fix the answer: the same input gives the same int8 output every run.

The feature net's stem and residual block run in int8 too (its 1x1 projection and instance
norm stay fp32): the features of a binary frame 17 -> 8.5 ms here. Only ``segnet`` (the uniform
planes) of the two SegNets; a model's ``pixel_segnet`` (the per-pixel passes of the
coarse-to-fine search) stays fp32.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from app.engine.bi3d.light import LightFeatNet, LightSegNet
from app.engine.bi3d.padding import Padder
from app.engine.errors import UserError
from app.engine.fileio import atomic_write

FORMAT = "bi3d-studio int8 calibration"
VERSION = 2  # 1: the SegNet alone
PARTS = ("features", "segnet")
# planes up to what ``depth.scene_range`` sweeps by default for a scene's top disparity
RANGE_MARGIN, RANGE_PAD, RANGE_MINIMUM = 1.25, 12.0, 48.0
CALIBRATION_SEED = 5 * 10**9  # far from training, validation and every held-out stream
_AGAIN = "delete it to measure it again"
_LAYERS = ("down1", "enc1", "down2", "enc2", "down3", "enc3", "down4", "enc4", "dec3", "dec2", "dec1", "out")


def quantized_engine() -> str | None:
    """torch's quantized engine this runs on (oneDNN), or None where this torch has none (or no
    longer has the FX quantization and quantized tensors this is built on)."""
    if "onednn" not in torch.backends.quantized.supported_engines or not hasattr(
        torch, "quantize_per_tensor"
    ):
        return None
    try:
        from torch.ao.quantization import quantize_fx  # noqa: F401
    except ImportError:
        return None
    return "onednn"


def int8_unavailable(model: Any, device: torch.device) -> str:
    """Why ``--precision int8`` cannot run this model here ("" if it can)."""
    if device.type != "cpu":
        return f"int8 runs on the CPU only ({device.type} asked); use fp16 or fp32 there"
    if not hasattr(model, "segnet") or not isinstance(getattr(model, "segnet", None), LightSegNet):
        return "int8 needs the light model (the bundled kind); use fp32 or bf16 for this one"
    if quantized_engine() is None:
        return f"this torch ({torch.__version__}) has no oneDNN int8 quantization; use fp32"
    return ""


class SegNetBody(nn.Module):
    """``LightSegNet.body`` over every column, in a form torch's FX quantization can trace
    (the layers are the SegNet's own modules, copied)."""

    down1: nn.Module
    enc1: nn.Module
    down2: nn.Module
    enc2: nn.Module
    down3: nn.Module
    enc3: nn.Module
    down4: nn.Module
    enc4: nn.Module
    dec3: nn.Module
    dec2: nn.Module
    dec1: nn.Module
    out: nn.Module

    def __init__(self, segnet: nn.Module) -> None:
        super().__init__()
        for name in _LAYERS:
            setattr(self, name, copy.deepcopy(getattr(segnet, name)))

    def forward(self, x: Tensor) -> Tensor:
        x1 = self.enc1(self.down1(x))
        x2 = self.enc2(self.down2(x1))
        x3 = self.enc3(self.down3(x2))
        x4 = self.enc4(self.down4(x3))
        y = self.dec3(torch.cat([_up(x4, x3), x3], 1))
        y = self.dec2(torch.cat([_up(y, x2), x2], 1))
        y = self.dec1(torch.cat([_up(y, x1), x1], 1))
        return self.out(y)


class FeatureStem(nn.Module):
    """``LightFeatNet``'s stem and residual block (its layers, copied), before the projection."""

    stem: nn.Module
    block: nn.Module

    def __init__(self, featnet: LightFeatNet) -> None:
        super().__init__()
        self.stem = copy.deepcopy(featnet.stem)
        self.block = copy.deepcopy(featnet.block)

    def forward(self, image: Tensor) -> Tensor:
        return self.block(self.stem(image))


def _up(x: Tensor, like: Tensor) -> Tensor:
    return F.interpolate(x, size=like.shape[-2:], mode="bilinear", align_corners=False)


def _qconfig_mapping() -> Any:
    """oneDNN's mapping with per-tensor min-max activation ranges over all 8 bits (the histogram
    observers' clipped ranges: 3.11 against 2.57 % phantoms on the held-out blank walls, fp32
    2.53 %), per-channel symmetric weights; the output layer's logits stay fp32."""
    from torch.ao.quantization import QConfig, get_default_qconfig_mapping
    from torch.ao.quantization.observer import MinMaxObserver, default_per_channel_weight_observer

    qconfig = QConfig(
        activation=MinMaxObserver.with_args(reduce_range=False), weight=default_per_channel_weight_observer
    )
    return get_default_qconfig_mapping("onednn").set_global(qconfig).set_module_name("out", None)


def _prepared(model: Any, part: str) -> Any:
    """A part (``PARTS``) of the model with observers after each quantized activation (FX)."""
    from torch.ao.quantization.quantize_fx import prepare_fx

    if part == "features":
        module: nn.Module = FeatureStem(model.featnet)
        example = torch.zeros(2, 3, 96, 96)
    else:
        module = SegNetBody(model.segnet)
        example = torch.zeros(1, model.segnet.proj_left.out_channels, 32, 96)
    example = example.contiguous(memory_format=torch.channels_last)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FX quantization's own deprecation notes
        return prepare_fx(module.eval(), _qconfig_mapping(), example_inputs=(example,))


def _observers(prepared: nn.Module) -> dict[str, Any]:
    from torch.ao.quantization.observer import ObserverBase

    return {
        name: module
        for name, module in prepared.named_children()
        if isinstance(module, ObserverBase) and name.startswith("activation_post_process")
    }


def weights_digest(model: Any) -> str:
    """sha256 of the feature net's and SegNet's weights (a calibration belongs to these only)."""
    h = hashlib.sha256()
    for part in (model.featnet, model.segnet):
        for name, tensor in sorted(part.state_dict().items()):
            h.update(name.encode())
            h.update(tensor.detach().cpu().float().contiguous().numpy().tobytes())
    return h.hexdigest()


@dataclass
class Int8Calibration:
    """Each quantized activation's (scale, zero point), by part and FX observer name
    (``"segnet/activation_post_process_0"``)."""

    digest: str  # weights_digest of the model it was measured for
    qparams: dict[str, tuple[float, int]]
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "weights_sha256": self.digest,
            "activations": {k: [s, z] for k, (s, z) in self.qparams.items()},
            "provenance": self.provenance,
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> Int8Calibration:
        try:
            if data.get("format") != FORMAT:
                raise ValueError("not an int8 calibration file")
            if data.get("version") != VERSION:
                raise ValueError(f"version {data.get('version')}, this reads {VERSION}")
            qparams = {}
            for name, (scale, zero) in data["activations"].items():
                scale, zero = float(scale), int(zero)
                if not (math.isfinite(scale) and scale > 0 and 0 <= zero <= 255):
                    raise ValueError(f"{name}: scale {scale}, zero point {zero}")
                qparams[str(name)] = (scale, zero)
            return cls(str(data["weights_sha256"]), qparams, dict(data.get("provenance", {})))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{where}: unreadable int8 calibration ({exc}); {_AGAIN}") from exc


def calibration_path(weights: str | Path) -> Path:
    """Where a checkpoint's int8 calibration lives: ``name.int8.json`` beside ``name.pt``."""
    weights = Path(weights)
    return weights.with_name(weights.stem + ".int8.json")


def read_calibration(path: Path) -> Int8Calibration:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: unreadable int8 calibration ({exc}); {_AGAIN}") from exc
    return Int8Calibration.from_json(data, str(path))


def write_calibration(path: Path, calibration: Int8Calibration) -> None:
    atomic_write(path, (json.dumps(calibration.to_json(), indent=1) + "\n").encode())


CalibrationPair = tuple[np.ndarray, np.ndarray, float]  # left, right (uint8 RGB), the scene's top disparity


def calibration_pairs(count: int = 8, height: int = 384, width: int = 576) -> list[CalibrationPair]:
    """Synthetic uint8 RGB pairs to measure ranges on, with their largest true disparity: layered
    and room scenes alternately, seeds from ``CALIBRATION_SEED`` (no held-out, validation or
    demo scene)."""
    from app.engine.synthetic.layered import SceneConfig, render_scene, to_uint8
    from app.engine.synthetic.rooms import RoomConfig, render_room

    pairs = []
    for i in range(count):
        if i % 2:
            sample = render_room(CALIBRATION_SEED + i, RoomConfig(height=height, width=width))
        else:
            sample = render_scene(CALIBRATION_SEED + i, SceneConfig(height=height, width=width))
        top = float(sample.disparity[torch.isfinite(sample.disparity)].max())
        pairs.append((to_uint8(sample.left), to_uint8(sample.right), top))
    return pairs


def calibrate(
    model: Any, pairs: Iterable[CalibrationPair] | None = None, plane_step: float = 3.0
) -> Int8Calibration:
    """Measure the activation ranges (min-max observers) of the feature net on each pair and of
    the SegNet on the planes the engine sweeps for it at the default ``--max-disparity auto``
    (every ``plane_step`` px up to 1.25 x the scene's top disparity + 12 px, at least 48, and the
    same planes offset by a third of a step, so fractional shifts are seen), in fp32."""
    seg, featnet = model.segnet, model.featnet
    prepared = {part: _prepared(model, part) for part in PARTS}
    pairs = list(calibration_pairs() if pairs is None else pairs)
    model_mode = model.training
    model.eval()
    originals = seg.quantized, featnet.quantized
    try:
        seg.quantized = _Calibrating(prepared["segnet"])
        featnet.quantized = _Observed(prepared["features"])
        with torch.no_grad():
            for left, right, top in pairs:
                padder = Padder(left.shape[0], left.shape[1], minimum=model.min_size)
                l_in, r_in = padder.network_pair(left, right, torch.device("cpu"), channels_last=True)
                feats = model.extract(l_in, r_in)
                bound = min(float(model.max_disparity), max(RANGE_MINIMUM, RANGE_MARGIN * top + RANGE_PAD))
                planes = np.arange(0.0, bound, plane_step)
                planes = np.concatenate([planes, planes[:-1] + plane_step / 3])
                shifts = torch.as_tensor(planes / 3.0, dtype=torch.float32)  # feature columns
                model.plane_logits(feats, shifts[shifts < model.max_shift], chunk=16)
    finally:
        seg.quantized, featnet.quantized = originals
        model.train(model_mode)
    qparams = {}
    for part in PARTS:
        for name, observer in _observers(prepared[part]).items():
            scale, zero = observer.calculate_qparams()
            qparams[f"{part}/{name}"] = (float(scale), int(zero))
    provenance = {
        "pairs": len(pairs),
        "scenes": f"layered and room scenes, seeds from {CALIBRATION_SEED}",
        "plane_step_px": plane_step,
        "torch": torch.__version__,
    }
    return Int8Calibration(weights_digest(model), qparams, provenance)


class _Calibrating:
    """Runs the observed (still fp32) body and crops as ``LightSegNet.body`` does. Not a module:
    set on a SegNet it is not one of its submodules (nor in its state dict)."""

    def __init__(self, prepared: nn.Module) -> None:
        self.prepared = prepared

    def __call__(self, x: Tensor, keep: int | None) -> Tensor:
        return self.prepared(x)[..., :keep]


class _Observed:
    """Runs the observed (still fp32) feature stem; not a module, like ``_Calibrating``."""

    def __init__(self, prepared: nn.Module) -> None:
        self.prepared = prepared

    def __call__(self, image: Tensor) -> Tensor:
        return self.prepared(image)


class QuantizedBody:
    """The int8 body: fp32 channels-last in, fp32 logits out (cropped to ``keep`` columns). Not
    a module, like ``_Calibrating``."""

    def __init__(self, converted: nn.Module) -> None:
        self.converted = converted.eval()

    def __call__(self, x: Tensor, keep: int | None) -> Tensor:
        with _onednn(), warnings.catch_warnings():
            # quantized cat's note that its inputs' ranges differ: it requantizes them to its own
            warnings.filterwarnings("ignore", "All inputs of this cat operator", UserWarning)
            # torch 2.13 marks quantized tensors deprecated (pytorch issue 184982); they still run
            warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
            return self.converted(x.float().contiguous(memory_format=torch.channels_last))[..., :keep]


class _onednn:
    """torch's quantized engine set to oneDNN for a call, restored after."""

    def __enter__(self) -> None:
        self.saved = torch.backends.quantized.engine
        if self.saved != "onednn":
            torch.backends.quantized.engine = "onednn"

    def __exit__(self, *exc: object) -> None:
        if torch.backends.quantized.engine != self.saved:
            torch.backends.quantized.engine = self.saved


class QuantizedFeatures:
    """The int8 stem and block: a fp32 channels-last image batch in, fp32 features out."""

    def __init__(self, converted: nn.Module) -> None:
        self.converted = converted.eval()

    def __call__(self, image: Tensor) -> Tensor:
        with _onednn(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
            return self.converted(image.float().contiguous(memory_format=torch.channels_last))


def quantized_parts(model: Any, calibration: Int8Calibration) -> tuple[QuantizedFeatures, QuantizedBody]:
    """The int8 feature stem and SegNet body of ``model`` with ``calibration``'s ranges."""
    if weights_digest(model) != calibration.digest:
        raise UserError(f"the int8 calibration belongs to other weights; {_AGAIN}")
    features = _converted(_prepared(model, "features"), "features", calibration)
    body = _converted(_prepared(model, "segnet"), "segnet", calibration)
    return QuantizedFeatures(features), QuantizedBody(body)


def _converted(prepared: Any, part: str, calibration: Int8Calibration) -> nn.Module:
    from torch.ao.quantization.observer import FixedQParamsObserver
    from torch.ao.quantization.quantize_fx import convert_fx

    observers = _observers(prepared)
    names = {f"{part}/{name}" for name in observers}
    if names != {k for k in calibration.qparams if k.startswith(f"{part}/")}:
        raise UserError(f"the int8 calibration does not match this torch version's graph; {_AGAIN}")
    for name in observers:
        scale, zero = calibration.qparams[f"{part}/{name}"]
        setattr(prepared, name, FixedQParamsObserver(scale, zero))
    with _onednn(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = convert_fx(prepared)
    for node in converted.graph.nodes:  # torch's quantized bilinear kernel is 3-5x slower
        if node.op == "call_function" and node.target is F.interpolate:
            node.target = _bilinear_through_float
    converted.recompile()
    return converted


def _bilinear_through_float(x: Tensor, size: Any = None, **kwargs: Any) -> Tensor:
    """``F.interpolate`` of a quantized tensor through fp32 and back to its own scale (a blend
    stays within its inputs' range): 4.6 against 13.5 ms at 16 x 32 x 80 x 139 here."""
    y = F.interpolate(x.dequantize(), size=size, **kwargs)
    return torch.quantize_per_tensor(y, x.q_scale(), x.q_zero_point(), x.dtype)


def int8_calibration(model: Any) -> Int8Calibration:
    """The model's int8 calibration (``load_model`` attaches the one beside its weights), or one
    measured now (about 20 s on 2 cores, once per process and model) with a note on stderr."""
    calibration = getattr(model, "int8_calibration", None)
    if isinstance(calibration, Int8Calibration) and calibration.digest == weights_digest(model):
        return calibration
    print(
        "int8: measuring activation ranges for these weights on 8 synthetic scenes (about 20 s); "
        "`python benchmarks/calibrate_int8.py WEIGHTS` writes them beside the weights once",
        file=sys.stderr,
        flush=True,
    )
    calibration = calibrate(model)
    model.int8_calibration = calibration
    return calibration


def attach_calibration(model: Any, weights: str | Path) -> str:
    """Attach the calibration beside ``weights`` to a light ``model`` if there is one for these
    weights; answers a one-line note when one is there but unusable ("" otherwise)."""
    path = calibration_path(weights)
    if not hasattr(model, "segnet") or not isinstance(model.segnet, LightSegNet) or not path.is_file():
        return ""
    try:
        calibration = read_calibration(path)
    except UserError as exc:
        return f"{exc} (int8 measures it again when asked for)"
    if calibration.digest != weights_digest(model):
        return f"{path} belongs to other weights; ignored (int8 measures the ranges again when asked for)"
    model.int8_calibration = calibration
    return ""


def int8_model(model: Any, calibration: Int8Calibration) -> Any:
    """A copy of ``model`` whose feature stem and ``segnet`` body run in int8 (the model given is
    unchanged: the engine's other runtimes and a trainer share it)."""
    features, body = quantized_parts(model, calibration)
    out = copy.deepcopy(model)
    out.featnet.quantized = features
    out.segnet.quantized = body
    return out
