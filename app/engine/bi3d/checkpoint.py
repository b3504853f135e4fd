"""Loading and saving Bi3D weights.

Two formats are read: the published checkpoints (``{"state_dict": ...}``, the kind
told by the keys, published width and 192 px) and this project's own files, which
add metadata (kind, width, max disparity, how the weights were trained). Files are
always read with ``weights_only=True``: a file that would run code on load is refused.
"""

from __future__ import annotations

import io
import pickletools
import sys
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from app.engine.bi3d.factory import build_model
from app.engine.bi3d.int8 import attach_calibration
from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.model import ModelKind, SweepModel
from app.engine.errors import UserError, setting
from app.engine.fileio import atomic_write
from app.engine.validation import Bounds, integer, number

FORMAT = "bi3d-studio"
FORMAT_VERSION = 1
PUBLISHED_MAX_DISPARITY = 192


@dataclass(frozen=True)
class ModelInfo:
    kind: ModelKind
    width: float = 1.0
    max_disparity: int = PUBLISHED_MAX_DISPARITY
    training: dict[str, Any] = field(default_factory=dict)
    source: str = "project"  # "project" or "published"


def detect_kind(keys: set[str] | Mapping[str, Any]) -> ModelKind | None:
    """Which kind a set of state-dict keys looks like, or None."""
    names = set(keys)
    if any(k.startswith("refinenet3d.") for k in names):
        return ModelKind.CONTINUOUS_3D
    if any(k.startswith("featnethr.") for k in names):
        return ModelKind.BINARY
    if any(k.startswith("refinenet.conv2d_feature") for k in names):
        return ModelKind.CONTINUOUS_2D
    return None


def detect_width(state: Mapping[str, torch.Tensor]) -> float:
    weight = state.get("featnet.firstconv.0.0.weight")
    if weight is None:
        return 1.0
    return int(weight.shape[0]) / 32.0


def _strip_prefix(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Checkpoints saved from DataParallel carry a ``module.`` prefix."""
    if state and all(k.startswith("module.") for k in state):
        return {k[len("module.") :]: v for k, v in state.items()}
    return dict(state)


def read_checkpoint(path: str | Path) -> tuple[dict[str, torch.Tensor], ModelInfo]:
    """Read weights and metadata; a clear ``UserError`` for anything that does not fit."""
    path = Path(path)
    if path.is_dir():  # an export folder, say: it read "not found" though it was there
        raise UserError(f"{setting('weights')} {path} is a folder; give a checkpoint file (.pt)")
    if not path.is_file():
        raise UserError(f"weights file not found: {path}; check the path")
    if path.stat().st_size == 0:
        raise UserError(f"weights file {path} is empty; download or export it again")
    data = load_tensors(path)
    if not isinstance(data, Mapping) or not isinstance(data.get("state_dict"), Mapping):
        raise UserError(f"{path} has no 'state_dict' entry; it is not a Bi3D checkpoint")
    state = _strip_prefix(data["state_dict"])
    if data.get("format") == FORMAT:
        try:
            info = ModelInfo(
                kind=ModelKind(data["kind"]),
                width=number(data.get("width", 1.0), f"{path}: metadata width", WIDTHS, hint=_EXPORT),
                max_disparity=integer(
                    data.get("max_disparity", PUBLISHED_MAX_DISPARITY),
                    f"{path}: metadata max_disparity",
                    Bounds(3, 1024),
                    "px",
                    _EXPORT,
                ),
                training=dict(data.get("training", {})),
                source="project",
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise UserError(f"{path} has unreadable metadata ({exc}); export the model again") from exc
    else:
        kind = detect_kind(state)
        if kind is None:
            raise UserError(f"{path}: the weights match no Bi3D kind (binary, continuous_2d, continuous_3d)")
        info = ModelInfo(kind, detect_width(state), PUBLISHED_MAX_DISPARITY, {}, "published")
    check_finite(state, path)
    return state, info


_EXPORT = "export the model again"
PIXEL_SEGNET = "pixel_segnet."
WIDTHS = Bounds(0, 8, low_open=True)  # channel multipliers: the published models are 1, the light 1


def check_finite(state: Mapping[str, torch.Tensor], path: str | Path) -> None:
    """Refuse weights holding NaN or infinities: they answer NaN for every pixel."""
    bad = [k for k, v in state.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        raise UserError(
            f"{path}: {len(bad)} of {len(state)} weight tensors hold NaN or infinite values (first: "
            f"{bad[0]}); the checkpoint is damaged (a diverged training?); use another checkpoint"
        )


def load_tensors(path: Path, advice: str = "check the file is complete") -> Any:
    """``torch.load`` with ``weights_only=True`` and one-line refusals: code-running pickles (zip or
    legacy format) are named as such, anything else unreadable is said to be damaged."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # pickle-protocol notes from torch
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # torch raises several types for corrupt archives
        if _imports_code(path):  # whatever torch raised first: the reason that matters is this
            raise UserError(
                f"{path} holds Python objects that would run code when loaded; refused. "
                "Re-save only the tensors: torch.save({'state_dict': model.state_dict()}, file)"
            ) from None
        # the exception's class name read as jargon ("(KeyError)": review): the file's state says it
        raise UserError(
            f"{path} is not a readable PyTorch checkpoint (damaged or not one); {advice}"
        ) from None


def _imports_code(path: Path) -> bool:
    """Whether a pickle (plain, or inside a torch zip archive) imports anything beyond
    torch's tensor rebuilders, i.e. could run arbitrary code when unpickled.

    Read with ``pickletools``, which decodes opcodes without executing anything.
    """
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                name = next(n for n in archive.namelist() if n.endswith("data.pkl"))
                raw = archive.read(name)
        else:
            raw = path.read_bytes()
            if not raw.startswith(b"\x80"):  # torch.save: protocol 2+; a text's 'c' reads as GLOBAL
                return False
        return any(not name.startswith(_SAFE_GLOBALS) for name in _pickle_globals(raw))
    except Exception:
        return False  # not a pickle at all: corrupt rather than unsafe


_SAFE_GLOBALS = ("torch.", "collections.OrderedDict")


def _pickle_globals(raw: bytes) -> list[str]:
    """'module.name' of every global a pickle imports."""
    names: list[str] = []
    stream = io.BytesIO(raw)
    # torch's legacy (non-zip) format is several pickles in a row: magic, protocol, system
    # info, then the data, then raw storages; the data pickle is the one that imports
    while stream.tell() < len(raw):
        strings: list[str] = []
        try:
            for op, arg, _pos in pickletools.genops(stream):
                if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
                    strings.append(str(arg))
                elif op.name in ("GLOBAL", "INST"):
                    names.append(str(arg).replace(" ", "."))
                elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                    names.append(f"{strings[-2]}.{strings[-1]}")
        except Exception:
            break  # the raw storages after the pickles (or damage): nothing more to decode
    return names


def load_model(path: str | Path, expect_kind: ModelKind | str | None = None) -> tuple[SweepModel, ModelInfo]:
    """Build the model a checkpoint describes and load it strictly."""
    state, info = read_checkpoint(path)
    if expect_kind is not None and ModelKind(expect_kind) is not info.kind:
        wanted = ModelKind(expect_kind).value
        raise UserError(f"{path} is a {info.kind.value} model; this needs a {wanted} model")
    try:
        model = build_model(info.kind, info.width, info.max_disparity)
    except ValueError as exc:
        raise UserError(f"{path}: {exc}") from exc
    if any(k.startswith(PIXEL_SEGNET) for k in state) and isinstance(model, LightBi3D):
        model.add_pixel_segnet()  # the per-pixel passes' own weights
    check_fit(model, state, path)
    model.load_state_dict(state, strict=True)
    note = attach_calibration(model, path)  # int8 activation ranges beside the weights (bi3d.int8)
    if note:
        print(f"note: {note}", file=sys.stderr, flush=True)
    return model.eval(), info


def check_fit(model: SweepModel, state: Mapping[str, torch.Tensor], path: str | Path) -> None:
    """Raise a ``UserError`` naming missing, unexpected and mis-shaped keys."""
    expected = model.state_dict()
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    shaped = [k for k in expected if k in state and tuple(state[k].shape) != tuple(expected[k].shape)]
    if not (missing or unexpected or shaped):
        return
    looks = detect_kind(state)
    hint = f"it looks like a {looks.value} model" if looks else "it looks like no Bi3D kind"
    raise UserError(
        f"{path} does not fit a {model.kind.value} model (width {model.width:g}): "
        f"{len(missing)} keys missing, {len(unexpected)} unexpected, {len(shaped)} with other shapes; {hint}"
    )


def save_checkpoint(
    path: str | Path, model: SweepModel, training: Mapping[str, Any] | None = None, half: bool = False
) -> None:
    """Write this project's format atomically (temporary file, then rename).

    ``half`` stores floating-point weights as fp16 (half the size; widened again on load).
    """
    path = Path(path)
    payload = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "kind": model.kind.value,
        "width": model.width,
        "max_disparity": model.max_disparity,
        "training": dict(training or {}),
        "state_dict": {
            k: v.detach().cpu().half() if half and v.is_floating_point() else v.detach().cpu()
            for k, v in model.state_dict().items()
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    atomic_write(path, buffer.getvalue())
