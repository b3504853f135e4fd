"""Exporting a model's stages to ONNX: one file per stage, metadata in the model properties.

Files: ``featnet.onnx`` (FeatNet, plus FeatNetHR for the binary kind, plus the per-frame part
of the light kind's factored first layer), ``segnet.onnx`` (plane-sweep volume from a shift
vector, then SegNet), ``refine.onnx`` (per-plane refinement to full resolution) and, for the
continuous kinds, ``disprefine.onnx`` and ``regularise.onnx`` (continuous-3D). Height,
width, batch and plane count are dynamic. fp16 files (``*.fp16.onnx``) hold an fp16 graph
(weights and activations) for TensorRT 11's strongly typed builds; shifts stay fp32.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import sys
import warnings
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor

from app.engine.bi3d.model import FEATURE_STRIDE, SIZE_MULTIPLE, SweepModel
from app.engine.errors import UserError
from app.engine.fileio import atomic_write
from app.engine.runtimes.base import RuntimeUnavailable, optional_module
from app.engine.runtimes.graphs import Stage, stages

FORMAT = "bi3d-studio-onnx"
FORMAT_VERSION = "1"
OPSET = 17
NORMALISATION = "RGB / 255, then (x - 0.5) / 0.5: range [-1, 1]; zero padding at top and left"
EXAMPLE_SIZE = (192, 288)


def import_onnx() -> Any:
    """The ``onnx`` package (export and metadata need it), or ``RuntimeUnavailable`` saying so."""
    return optional_module("onnx", "the onnx package is not installed (pip install onnx)")


def model_fingerprint(model: SweepModel) -> str:
    """sha256 over the kind, width, range, every weight and the code that builds the graphs:
    names a model's exports, so neither new weights nor a new version reuse stale files."""
    digest = hashlib.sha256(f"{model.kind.value}|{model.width:g}|{model.max_disparity}".encode())
    digest.update(_graph_code())
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def metadata(model: SweepModel, stage: str, precision: str, fingerprint: str) -> dict[str, str]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": model.kind.value,
        "width": f"{model.width:g}",
        "max_disparity": str(model.max_disparity),
        "max_shift": str(model.max_shift),
        "feature_stride": str(FEATURE_STRIDE),
        "size_multiple": str(SIZE_MULTIPLE),
        "min_size": str(model.min_size),
        "normalisation": NORMALISATION,
        "stage": stage,
        "precision": precision,
        "fingerprint": fingerprint,
    }


def export_stages(model: SweepModel, precision: str = "fp32") -> dict[str, bytes]:
    """Every stage as serialised ONNX, in memory."""
    if precision not in ("fp32", "fp16"):
        raise ValueError(f"ONNX export precision must be fp32 or fp16, got {precision}")
    return _export(model, precision, model_fingerprint(model))


def write_onnx(model: SweepModel, directory: str | Path, precision: str = "fp32") -> list[Path]:
    """Write ``<stage>.onnx`` (``<stage>.fp16.onnx``) files into ``directory``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    suffix = ".onnx" if precision == "fp32" else f".{precision}.onnx"
    paths = []
    for name, data in export_stages(model, precision).items():
        path = out / f"{name}{suffix}"
        atomic_write(path, data)
        paths.append(path)
    return paths


def stale_exports(
    model: SweepModel, directory: str | Path, precision: str = "fp32"
) -> list[tuple[Path, str]]:
    """What stands in ``directory`` before ``write_onnx``: an ONNX file there that bi3d-studio did
    not export is a ``UserError`` (the export replaced a user's ``segnet.onnx`` unsaid, and any
    other file failed the check after it); an earlier export's stages this model lacks are
    returned with what they were, for the caller to remove once the new files are written
    (another kind's ``disprefine.onnx`` failed every export into the folder after it)."""
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder} is a file, not a folder: choose another --onnx folder")
    if not folder.exists():
        return []
    suffix = ".onnx" if precision == "fp32" else f".{precision}.onnx"
    names = {stage.name for stage in stages(model)}
    stale = []
    for path in sorted(folder.glob(f"*{suffix}")):
        if suffix == ".onnx" and path.name.endswith(".fp16.onnx"):
            continue  # the other precision's files stand apart
        try:
            meta = read_metadata(path)
        except RuntimeUnavailable:
            meta = {}
        if meta.get("format") != FORMAT:
            raise UserError(
                f"{path} is not a bi3d-studio export: not replaced or mixed with; "
                "choose another --onnx folder"
            )
        stage = path.name.removesuffix(suffix)
        if stage not in names:
            kind = meta.get("kind", "other")
            stale.append(
                (path, f"the {meta.get('stage', stage)} stage of a {kind} model exported here before")
            )
    return stale


def read_metadata(path: str | Path) -> dict[str, str]:
    """The model properties of an ONNX file (no weights are loaded)."""
    onnx = import_onnx()

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise RuntimeUnavailable(f"{path} is not a readable ONNX file ({type(exc).__name__})") from exc
    return {p.key: p.value for p in proto.metadata_props}


def check_onnx(
    path: str | Path, model: SweepModel, stage: str, precision: str = "fp32", fingerprint: str | None = None
) -> None:
    """Refuse an ONNX file made from another model, kind, stage or precision (one line, why).

    ``fingerprint``: the model's, when the caller has it (hashing large weights takes a while)."""
    meta = read_metadata(path)
    if meta.get("format") != FORMAT:
        raise RuntimeUnavailable(f"{path} was not exported by bi3d-studio; export it again")
    want = metadata(model, stage, precision, "")
    for field in ("kind", "width", "max_disparity", "stage", "precision"):
        if meta.get(field) != want[field]:
            raise RuntimeUnavailable(
                f"{path} is a {meta.get('kind')} model's {meta.get('stage')} stage "
                f"({field} {meta.get(field)}, expected {want[field]}); export it again"
            )
    if meta.get("fingerprint") != (fingerprint or model_fingerprint(model)):
        raise RuntimeUnavailable(f"{path} holds other weights than the loaded model; export it again")


@functools.cache
def _graph_code() -> bytes:
    """The source of the modules that shape the exported graphs, so cached exports go stale when
    the code changes. A frozen build (PyInstaller) ships no sources: its version and the size and
    time of its executable stand in, since such a build never changes in place."""
    from app import __version__
    from app.engine.bi3d import layers, light, network
    from app.engine.bi3d import model as sweep
    from app.engine.runtimes import graphs

    try:
        return b"".join(Path(m.__file__ or "").read_bytes() for m in (graphs, layers, light, sweep, network))
    except OSError:
        exe = Path(sys.executable).stat()
        return f"frozen {__version__} {exe.st_size} {exe.st_mtime_ns}".encode()


def _export(model: SweepModel, precision: str, fingerprint: str) -> dict[str, bytes]:
    onnx = import_onnx()

    source = copy.deepcopy(model).cpu().eval()
    dtype = torch.float16 if precision == "fp16" else torch.float32
    source = source.to(dtype)
    frame = _example(source, dtype)
    out: dict[str, bytes] = {}
    with torch.inference_mode(False), torch.no_grad():
        for stage in stages(source):
            args = tuple(frame[name] for name in stage.inputs)
            if stage.name == "regularise":  # RefineNet3D takes 16k + 1 planes
                args = (args[0][:, :1].expand(-1, 17, -1, -1).contiguous(), *args[1:])
            data = _export_stage(stage, args)
            proto = onnx.load_from_string(data)
            for key, value in metadata(model, stage.name, precision, fingerprint).items():
                entry = proto.metadata_props.add()
                entry.key, entry.value = key, value
            result = stage.module(*args)
            outputs = result if isinstance(result, tuple) else (result,)
            _declare_output_dims(proto, stage.dynamic, outputs)
            out[stage.name] = proto.SerializeToString()
            frame.update(zip(stage.outputs, outputs, strict=True))
            if stage.name == "segnet":
                frame["lowres"] = frame["logits"]
    return out


def _example(model: SweepModel, dtype: torch.dtype) -> dict[str, Tensor]:
    h, w = EXAMPLE_SIZE
    gen = torch.Generator().manual_seed(0)
    left = torch.rand(1, 3, h, w, generator=gen).to(dtype) * 2 - 1
    return {
        "left": left,
        "right": left.roll(-6, 3),
        "shifts": torch.tensor([0.0, 1.5]),
        "normalized": torch.full((1, 1, h, w), 0.25, dtype=dtype),
    }


def _declare_output_dims(proto: Any, dynamic: dict[str, dict[int, str]], outputs: tuple[Tensor, ...]) -> None:
    """The graph outputs' shapes as the stage declares them: ONNX's inference named some fixed
    dimensions as if they moved (the feature net's ``left_pad`` channels read ``sweep_width``, the
    unit vectors' ``Divleft_unit_dim_1``), which tools that read the declared shapes (TensorRT
    profiles, Netron) take at their word. A dimension not declared dynamic gets its size."""
    for value, tensor in zip(proto.graph.output, outputs, strict=True):
        names = dynamic.get(value.name, {})
        for i, dim in enumerate(value.type.tensor_type.shape.dim):
            if i in names:
                dim.dim_param = names[i]
            else:
                dim.dim_value = int(tensor.shape[i])


def _export_stage(stage: Stage, args: tuple[Tensor, ...]) -> bytes:
    names = list(stage.inputs)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # the legacy (TorchScript) exporter warns that it is deprecated and about traced
        # shape checks; it handles dynamic axes without onnxscript, which torch 2.13 lacks here
        warnings.simplefilter("ignore")
        torch.onnx.export(
            stage.module,
            args,
            cast(Any, buffer),  # a file object works; the annotation names paths only
            dynamo=False,
            input_names=names,
            output_names=list(stage.outputs),
            dynamic_axes=stage.dynamic,
            opset_version=OPSET,
        )
    return buffer.getvalue()
