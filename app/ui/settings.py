"""Settings remembered between runs: a typed model saved as JSON (window layout goes to QSettings).

Unknown keys and out-of-range values are rejected with a message naming the field; the app
then starts from defaults rather than failing.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.engine.errors import UserError
from app.engine.fileio import user_dir
from app.engine.formats import COLORMAPS, atomic_write
from app.engine.types import Mode, Spacing

ENGINE_CHOICES = ("auto", "bi3d", "sgbm")
DEVICES = ("cpu", "cuda")
PRECISIONS = ("auto", "fp32", "tf32", "bf16", "fp16")
RUNTIMES = ("auto", "torch", "onnxruntime", "tensorrt")
FLOW_CHOICES = ("off", "auto", "dis", "farneback", "nvof")
FLOW_VIEWS = ("colour", "arrows")  # colour wheel coding, or arrows over the left image


@dataclass
class Settings:
    source: str = ""
    mode: str = Mode.CONTINUOUS.value
    plane_px: float = 30.0
    levels: int = 8
    spacing: str = Spacing.DISPARITY.value
    range_px: tuple[float, float] = (20.0, 60.0)
    budget_on: bool = False
    budget_ms: float = 200.0
    max_disparity: int = 128
    engine: str = "auto"
    compare: bool = False
    weights: str = ""
    device: str = "cpu"
    precision: str = "auto"  # bf16 on CPUs with native bf16, else fp32
    subpixel: bool = True  # Bi3D continuous/selective: sub-pixel matching refinement of the readout
    plane_check: bool = True  # Bi3D binary/quantized: matching check of hesitant answers near each plane
    runtime: str = "auto"
    colormap: str = "turbo"
    auto_range: bool = True
    display_max: float = 96.0
    flow: str = "off"
    flow_view: str = "colour"
    flow_max: float = 0.0  # clamp for flow colours and arrows (px); 0: automatic
    calibration: str = ""

    def validate(self) -> None:
        choices = {
            "mode": [m.value for m in Mode], "spacing": [s.value for s in Spacing], "engine": ENGINE_CHOICES,
            "device": DEVICES, "precision": PRECISIONS, "colormap": COLORMAPS, "flow": FLOW_CHOICES,
            "runtime": RUNTIMES, "flow_view": FLOW_VIEWS,
        }  # fmt: skip
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise UserError(f"setting {name}={getattr(self, name)!r} is not one of {', '.join(allowed)}")
        lo, hi = self.range_px
        if not 0 <= lo < hi <= self.max_disparity:
            raise UserError(
                f"setting range_px={list(self.range_px)} must satisfy 0 <= min < max <= max_disparity"
            )
        if not 0 <= self.plane_px <= self.max_disparity:
            raise UserError(f"setting plane_px={self.plane_px} must lie in [0, {self.max_disparity}]")
        if not 1 <= self.levels <= 63:
            raise UserError(f"setting levels={self.levels} must lie in [1, 63]")
        if self.budget_ms <= 0 or self.display_max <= 0:
            raise UserError("settings budget_ms and display_max must be positive")
        if self.flow_max < 0:
            raise UserError(f"setting flow_max={self.flow_max} must be 0 (automatic) or positive")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise UserError(f"unknown setting {unknown[0]!r}; known: {', '.join(sorted(names))}")
        try:
            values = dict(data)
            if "range_px" in values:
                values["range_px"] = tuple(float(v) for v in values["range_px"])
            settings = cls(**values)
        except (TypeError, ValueError) as exc:
            raise UserError(f"unreadable settings ({exc})") from exc
        settings.validate()
        return settings

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["range_px"] = list(self.range_px)
        return out


def settings_dir() -> Path:
    """Where settings live; ``BI3D_STUDIO_CONFIG_DIR`` overrides (tests use a fresh one each)."""
    return user_dir("BI3D_STUDIO_CONFIG_DIR", "XDG_CONFIG_HOME", ".config")


def load_settings(path: Path | None = None) -> tuple[Settings, str | None]:
    """Settings from disk, or defaults and the reason when the file is missing or bad."""
    path = path or settings_dir() / "settings.json"
    if not path.is_file():
        return Settings(), None
    try:
        return Settings.from_dict(json.loads(path.read_text())), None
    except (json.JSONDecodeError, UserError) as exc:
        return Settings(), f"ignored {path}: {exc}; using defaults"


def save_settings(settings: Settings, path: Path | None = None) -> None:
    path = path or settings_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(settings.to_dict(), indent=2) + "\n").encode())
