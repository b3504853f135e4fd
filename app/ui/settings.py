"""Settings remembered between runs: a validated pydantic model saved as JSON (the window's
layout goes to QSettings).

The engine's switches are fields built from ``app.vocabulary.ENGINE_SETTINGS``, so a new
switch needs no change here. Unknown keys and out-of-range values are refused with a message
naming the field; the app then starts from defaults rather than failing. Files written by
older versions (no ``version`` key) are read as they were and migrated, with a note.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from app import vocabulary
from app.engine.errors import UserError
from app.engine.session import Session

SETTINGS_VERSION = 2
FLOW_VIEWS = vocabulary.FLOW_VIEWS


class SettingsBase(BaseModel):
    """The window's own settings; the engine's switches are added from the vocabulary."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    version: int = SETTINGS_VERSION
    source: str = ""
    mode: str = vocabulary.MODE.default
    plane_px: float = vocabulary.PLANE.default
    levels: int = vocabulary.LEVELS.default
    spacing: str = vocabulary.SPACING.default
    range_px: tuple[float, float] = vocabulary.RANGE.default
    budget_on: bool = False
    budget_ms: float = vocabulary.BUDGET.default
    # the command line's ceiling: the binary plane slider and the selective range reach as far, and
    # the greyed number beside a ticked "auto" is the most auto sweeps to
    max_disparity: int = vocabulary.DEFAULT_MAX_DISPARITY
    max_disparity_auto: bool = True  # continuous: sweep to each frame's estimated reach (at most 192 px)
    min_confidence: float = vocabulary.MIN_CONFIDENCE.default
    compare: bool = False
    swap_views: bool = False  # the source's images the wrong way round: take its right as the left
    colormap: str = vocabulary.COLORMAP.default
    auto_range: bool = True
    display_max: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 96.0
    flow: str = vocabulary.FLOW.default
    flow_view: str = "colour"
    flow_max: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0  # flow colour/arrow clamp; 0: auto
    calibration: str = ""
    last_folder: str = ""  # where the file dialogs start: the folder of the last file chosen
    output_folder: str = ""  # where snapshots, recordings and point clouds go ("": Documents/Bi3D Studio)

    @field_validator("*", mode="before")
    @classmethod
    def _in_vocabulary(cls, value: Any, info: Any) -> Any:
        known = vocabulary.SETTINGS.get(info.field_name)
        if known is None or info.field_name == "range":
            return value
        try:
            return known.check(value)
        except UserError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("flow_view")
    @classmethod
    def _flow_view(cls, value: str) -> str:
        if value not in FLOW_VIEWS:
            raise ValueError(f"is not one of {', '.join(FLOW_VIEWS)}")
        return value

    @model_validator(mode="after")
    def _inside_the_range(self) -> SettingsBase:
        # the plane and the range are kept as chosen, within what any maximum allows: a lower
        # max_disparity clamps what they send, not what they are (it cut them for good)
        top = int(vocabulary.MAX_DISPARITY.maximum or vocabulary.DEFAULT_MAX_DISPARITY)
        lo, hi = self.range_px
        if not 0 <= lo < hi <= top:
            raise ValueError(f"range_px {list(self.range_px)} must satisfy 0 <= min < max <= {top}")
        if not 0 <= self.plane_px <= top:
            raise ValueError(f"plane_px {self.plane_px:g} must lie in [0, {top}]")
        return self

    def update(self, **changes: Any) -> None:
        """Change several fields at once, validated together (one at a time may pass through a
        state the cross-field rules refuse, e.g. lowering max_disparity below the range)."""
        checked = type(self).model_validate({**self.model_dump(), **changes})
        for name in changes:
            self.__dict__[name] = checked.__dict__[name]

    def to_dict(self) -> dict[str, Any]:
        out = self.model_dump()
        out["range_px"] = list(self.range_px)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        """Settings from a parsed file; a ``UserError`` names the first bad field."""
        try:
            return Settings.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "settings"
            if first["type"] == "extra_forbidden":
                known = ", ".join(sorted(Settings.model_fields))
                raise UserError(f"unknown setting {where!r}; known: {known}") from None
            raise UserError(f"setting {where}: {first['msg']}") from None


def _engine_field(s: vocabulary.Setting) -> tuple[Any, Any]:
    kinds = {"choice": str, "switch": bool, "integer": int, "number": float, "path": str}
    return kinds[s.kind], s.default


if TYPE_CHECKING:

    class Settings(SettingsBase):
        def __getattr__(self, name: str) -> Any: ...  # the engine switches, from the vocabulary

else:
    Settings = create_model(
        "Settings",
        __base__=SettingsBase,
        __doc__="The window's settings with the engine's switches.",
        **{s.name: _engine_field(s) for s in vocabulary.ENGINE_SETTINGS},
    )


def engine_values(settings: SettingsBase) -> dict[str, Any]:
    """The engine switches' values (setting name -> value)."""
    return {s.name: getattr(settings, s.name) for s in vocabulary.ENGINE_SETTINGS}


def settings_dir() -> Path:
    """Where settings live; ``BI3D_STUDIO_CONFIG_DIR`` overrides (tests use a fresh one each)."""
    return Session.config_dir()


def load_settings(path: Path | None = None) -> tuple[Settings, str | None]:
    """Settings from disk, or defaults and the reason when the file is missing or bad."""
    path = path or settings_dir() / "settings.json"
    if not path.is_file():
        return Settings(), None
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise UserError("not a JSON object")
        note = _migrate(data)
        return Settings.from_dict(data), (f"{path}: {note}" if note else None)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, UserError) as exc:
        # the defaults are saved over it on exit: the user's file is kept beside it first
        kept = path.with_name(path.name + ".bad")
        try:
            shutil.copyfile(path, kept)
            where = f" (kept as {kept})"
        except OSError:
            where = ""
        return Settings(), f"ignored {path}: {exc}; using defaults{where}"


def _migrate(data: dict[str, Any]) -> str | None:
    """Bring a file of an older version up to date in place; what was done, or None."""
    version = data.get("version")
    if version == SETTINGS_VERSION:
        return None
    if version is not None:
        raise UserError(f"settings version {version!r} is not one this app reads ({SETTINGS_VERSION})")
    data["version"] = SETTINGS_VERSION
    return f"settings of an earlier version, migrated to version {SETTINGS_VERSION} (saved on exit)"


def save_settings(settings: SettingsBase, path: Path | None = None) -> None:
    path = path or settings_dir() / "settings.json"
    Session.write_file(path, (json.dumps(settings.to_dict(), indent=2) + "\n").encode())
