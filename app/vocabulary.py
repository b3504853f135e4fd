"""The user's vocabulary: every choice a person makes, with its label, flag, help and range.

The command line and the window both build their inputs from these descriptions and both turn
what the user chose into the engine's ``EngineOptions`` and ``DepthRequest`` through the two
functions at the end. Adding an engine switch means a field in ``EngineOptions`` (the engine)
and one ``Setting`` in ``ENGINE_SETTINGS`` here: the flag, the window's control, the settings
file's field and the translation into options follow from it.

Engine errors name settings (``app.engine.errors.setting``); ``cli_words`` and
``window_words`` word them for each front end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.engine.depth.engines import EngineOptions

__all__ = ["ENGINE_SETTINGS", "SETTINGS", "EngineOptions", "Setting", "depth_request", "engine_options"]
from app.engine.depth.sgbm import SGBMParams
from app.engine.errors import UserError, setting, word_settings
from app.engine.formats import COLORMAPS
from app.engine.types import (
    DEFAULT_MAX_DISPARITY,
    DEFAULT_MIN_CONFIDENCE,
    DEVICES,
    ENGINES,
    FLOW_BACKENDS,
    MAX_DISPARITY_LIMIT,
    PRECISIONS,
    RUNTIMES,
    SEARCHES,
    SGBM_MODES,
    SHIFT_MODES,
    Calibration,
    DepthRequest,
    Mode,
    Spacing,
)
from app.engine.validation import Bounds, integer, number

Kind = Literal["choice", "switch", "integer", "number", "path"]


@dataclass(frozen=True)
class Setting:
    """One choice: ``name`` is its key in settings files and engine messages.

    ``target`` is the ``EngineOptions`` field it sets (``sgbm.NAME`` for an ``SGBMParams``
    field); ``flag`` the command line's; ``label`` the window's. A switch whose default is on
    is turned off on the command line by ``--no-...`` (its ``flag``).
    """

    name: str
    label: str
    flag: str
    help: str
    kind: Kind
    default: Any
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    unit: str = ""
    odd: bool = False
    target: str = ""

    def check(self, value: Any) -> Any:
        """``value`` converted to this setting's type, or a ``UserError`` naming the setting."""
        if self.kind == "choice":
            if value not in self.choices:
                raise UserError(f"{setting(self.name)} {value!r} is not one of {', '.join(self.choices)}")
            return value
        if self.kind == "switch":
            if not isinstance(value, bool):
                raise UserError(f"{setting(self.name)} must be true or false, got {value!r}")
            return value
        if self.kind == "path":
            return "" if value is None else str(value)
        return self._number(value)

    def _number(self, value: Any) -> float | int:
        """Through the engine's one validation layer (finite, in range, unit and range in the
        message), plus this setting's own rule (odd)."""
        name = setting(self.name)
        bounds = Bounds(self.minimum, self.maximum)
        unit = self.unit.strip()
        checked = (
            integer(value, name, bounds, unit)
            if self.kind == "integer"
            else number(value, name, bounds, unit)
        )
        if self.odd and int(checked) % 2 == 0:
            raise UserError(f"{name} {checked} px must be odd ({bounds.describe(unit)}, odd)")
        return checked


def _choice(
    name: str, label: str, flag: str, choices: tuple[str, ...], default: str, help: str, target: str = ""
) -> Setting:
    return Setting(name, label, flag, help, "choice", default, choices, target=target or name)


ENGINE_SETTINGS: tuple[Setting, ...] = (
    _choice("engine", "Engine", "--engine", ("auto", *ENGINES), "auto",
            "auto: Bi3D with the bundled model if there is one, else SGBM"),
    Setting("weights", "Weights", "--weights", "Bi3D checkpoint (published or project format); "
            "empty: the bundled default model", "path", "", target="weights"),
    _choice("device", "Device", "--device", DEVICES, "cpu", "where Bi3D runs"),
    _choice("precision", "Precision", "--precision", PRECISIONS, "auto",
            "Bi3D precision (auto: bf16 on a CPU with native bf16, else fp32; tf32 and fp16 need CUDA; "
            "int8 runs the light model's convolutions in int8 on the CPU, 8-37 % faster on a 2-core "
            "AMD EPYC, slightly less accurate; onnxruntime runs fp32 only)"),
    _choice("runtime", "Runtime", "--runtime", RUNTIMES, "auto",
            "Bi3D runtime: auto times those available on the first frame and runs the fastest; a named "
            "one falls back (tensorrt -> onnxruntime -> torch) and says why"),
    _choice("shift_mode", "Plane shifts", "--shift-mode", SHIFT_MODES, "auto",
            "planes off the 3 px grid: round to it (published models), or answer them exactly by "
            "interpolating features (auto: exact for the light model, which answers them as well)"),
    Setting("cuda_graphs", "CUDA graphs", "--cuda-graphs", "torch runtime on CUDA: capture the network "
            "once per frame size and plane batch, then replay", "switch", False, target="cuda_graphs"),
    Setting("subpixel", "Sub-pixel refinement", "--no-subpixel", "Bi3D continuous and selective modes: "
            "re-measure each pixel between the network's planes by local matching (more precise, "
            "slower)", "switch", True, target="subpixel"),
    Setting("plane_check", "Plane check", "--no-plane-check", "Bi3D binary and quantized modes: where "
            "the network hesitates near a plane, decide by local matching of the images, then smooth "
            "along image edges (at 480x640 on 2 cores: 7-8 ms for one plane, 4.5-5.5 ms for each "
            "further plane)",
            "switch", True, target="plane_check"),
    Setting("align", "Vertical alignment", "--no-align", "both engines: measure the pair's vertical "
            "misalignment (on a stream's first frame, every 300 frames and when the view changes) and, "
            "above 0.25 px RMS, move the right image's rows to cancel it before matching", "switch", True,
            target="align"),
    Setting("exposure_stretch", "Exposure stretch", "--no-exposure-stretch", "Bi3D: where the pair is "
            "underexposed (its brightest 0.5 % below grey level 160), stretch its contrast to 192 levels, "
            "the same for both images, before matching", "switch", True, target="exposure_stretch"),
    Setting("colour_choice", "Colour choice", "--no-colour-choice", "Bi3D, colour cameras: on a "
            "stream's first frame (again on a new frame size, or when the colours' balance moves 6 %), "
            "read depth with the network seeing the colours and the grey levels, and keep grey levels "
            "where they match the images clearly better (a colour cast both cameras share); off: "
            "colours as they come", "switch", True, target="colour_choice"),
    _choice("search", "Search", "--search", SEARCHES, "auto",
            "Bi3D continuous mode: the full sweep of every 3 px plane, or coarse-to-fine (planes "
            "every 24 px, then 3 per-pixel bisection passes: about 2.5x faster over 0-192 px, about "
            "3-4 points more bad-2 with the bundled model; light model on torch only); auto: the full "
            "sweep, and the latency budget may choose coarse-to-fine where the model has weights "
            "trained for it"),
    Setting("block_size", "SGBM block", "--block-size", "SGBM matching block size", "integer", 5,
            minimum=1, maximum=11, unit=" px", odd=True, target="sgbm.block_size"),
    Setting("uniqueness", "SGBM uniqueness", "--uniqueness", "SGBM uniqueness ratio", "integer", 10,
            minimum=0, maximum=100, unit=" %", target="sgbm.uniqueness"),
    Setting("speckle_window", "SGBM speckle window", "--speckle-window", "SGBM speckle filter window "
            "(0: off)", "integer", 100, minimum=0, maximum=1000, unit=" px", target="sgbm.speckle_window"),
    _choice("sgbm_mode", "SGBM mode", "--sgbm-mode", SGBM_MODES, "3way", "SGBM cost aggregation",
            "sgbm.mode"),
)  # fmt: skip
# the settings only Bi3D reads (the window greys them while SGBM is the engine)
BI3D_ONLY = frozenset(
    {"weights", "device", "precision", "runtime", "shift_mode", "cuda_graphs", "subpixel", "plane_check",
     "exposure_stretch", "colour_choice", "search"}
)  # fmt: skip

MODE = _choice(
    "mode", "Mode", "--mode", tuple(m.value for m in Mode), Mode.CONTINUOUS.value,
    "binary: one plane; quantized: N planes; selective: a range; continuous: all",
)  # fmt: skip
SPACING = _choice(
    "spacing", "Spacing", "--spacing", tuple(s.value for s in Spacing), Spacing.DISPARITY.value,
    "quantized planes spread evenly in disparity or in depth (needs a calibration)",
)  # fmt: skip
LEVELS = Setting(
    "levels", "Levels", "--levels", "quantized: number of planes spread by spacing (at most one a px "
    "of the range)", "integer", 8, minimum=1, maximum=MAX_DISPARITY_LIMIT,
)  # fmt: skip
MAX_DISPARITY = Setting(
    "max_disparity", "Max disparity", "--max-disparity", "disparity range searched", "integer",
    DEFAULT_MAX_DISPARITY, minimum=16, maximum=MAX_DISPARITY_LIMIT, unit=" px",
)  # fmt: skip
BUDGET = Setting(
    "budget_ms", "Latency budget", "--budget-ms",
    "latency budget: the engine picks the plane count or step that fits", "number", 200.0,
    minimum=5, maximum=3000, unit=" ms",
)  # fmt: skip
PLANE = Setting(
    "plane_px", "Plane", "--planes", "binary: the plane", "number", 30.0, minimum=0, maximum=256, unit=" px"
)
RANGE = Setting(
    "range", "Range", "--range", "selective: MIN MAX", "number", (20.0, 60.0), minimum=0, maximum=256,
    unit=" px",
)  # fmt: skip
MIN_CONFIDENCE = Setting(
    "min_confidence", "Min confidence", "--min-confidence",
    "Bi3D continuous and selective: pixels whose answer is rated below this (0-1; from the probability "
    "curve and the images' matching) are left unknown; 0 keeps every answer", "number",
    DEFAULT_MIN_CONFIDENCE, minimum=0, maximum=1,
)  # fmt: skip
REQUEST_SETTINGS: tuple[Setting, ...] = (
    MODE, PLANE, LEVELS, SPACING, RANGE, MAX_DISPARITY, BUDGET, MIN_CONFIDENCE
)  # fmt: skip

FLOW = _choice("flow", "Optical flow", "--backend", ("off", *FLOW_BACKENDS), "off",
               "optical flow backend (auto: nvof when its probe passes, else dis)")  # fmt: skip
COLORMAP = _choice("colormap", "Colour map", "--colormap", COLORMAPS, "turbo", "disparity colours")
FLOW_VIEWS = ("colour", "arrows")  # colour wheel coding, or arrows over the left image

SETTINGS: dict[str, Setting] = {s.name: s for s in (*ENGINE_SETTINGS, *REQUEST_SETTINGS, FLOW, COLORMAP)}


# actions an engine message may advise (``setting(name)``), as each front end offers them: the
# window said "self-rectify with 'calib rectify'", a command its user never typed
ACTIONS: dict[str, tuple[str, str]] = {
    "calib_rectify": ("'bi3d-studio calib rectify'", "the Calibration panel's Self-rectify"),
}


# ---- wording of engine messages -----------------------------------------------------------
def cli_words(name: str, value: str | None) -> str:
    """A setting as the command line spells it: ``--device cpu``, ``--no-subpixel``."""
    if name in ACTIONS:
        return ACTIONS[name][0]
    known = SETTINGS.get(name)
    if known is None:
        return name if value is None else f"{name} {value}"
    if known.kind == "switch":
        return known.flag
    return known.flag if value is None else f"{known.flag} {value}"


def window_words(name: str, value: str | None) -> str:
    """A setting as the window names it: ``Device: cuda``, ``the Max disparity control``."""
    if name in ACTIONS:
        return ACTIONS[name][1]
    known = SETTINGS.get(name)
    label = known.label if known is not None else name.replace("_", " ")
    return f"the {label} control" if value is None else f"{label}: {value}"


# commands an engine note names where the window has the same action (the notes dialog said
# "check the rig with 'bi3d-studio calib check'" beside the panel's own button: review)
WINDOW_ACTIONS = {
    "'bi3d-studio calib check'": "the Calibration panel's 'Check the current pair'",
}


def word(text: str) -> str:
    """``text`` (which may name settings, or a command the window has a button for) worded for
    the window."""
    worded = word_settings(text, window_words)
    for command, action in WINDOW_ACTIONS.items():
        worded = worded.replace(command, action)
    return worded


# ---- choices -> engine inputs ---------------------------------------------------------------
def engine_options(values: Mapping[str, Any], base: EngineOptions | None = None) -> EngineOptions:
    """The ``EngineOptions`` that ``values`` (setting name -> value) describe, over ``base``.

    Settings missing from ``values`` keep ``base``'s value (or the engine's default).
    """
    options = base or EngineOptions()
    top: dict[str, Any] = {}
    sgbm: dict[str, Any] = {}
    for s in ENGINE_SETTINGS:
        if s.name not in values:
            continue
        value = s.check(values[s.name])
        if s.name == "engine":
            value = None if value == "auto" else value
        elif s.kind == "path":
            value = Path(value) if value else None
        if s.target.startswith("sgbm."):
            sgbm[s.target.removeprefix("sgbm.")] = value
        else:
            top[s.target] = value
    if sgbm:
        top["sgbm"] = dataclasses.replace(options.sgbm or SGBMParams(), **sgbm)
    return dataclasses.replace(options, **top)


def depth_request(
    mode: str,
    *,
    planes: tuple[float, ...] = (),
    levels: int | None = None,
    spacing: str = Spacing.DISPARITY.value,
    range_px: tuple[float, float] | None = None,
    budget_ms: float | None = None,
    max_disparity: int | str = "auto",
    calibration: Calibration | None = None,
    min_confidence: float | None = None,
) -> DepthRequest:
    """The request for ``mode``: inputs another mode uses are dropped, numbers are checked.
    ``max_disparity`` "auto": continuous depth sweeps each frame up to its estimated reach, and
    quantized levels spread up to it, at most ``DEFAULT_MAX_DISPARITY``; binary and selective
    modes need no bound for Bi3D, and SGBM searches to the scene's bound past the top plane or
    range end (it leaves the left columns it searches without an answer)."""
    m = Mode(MODE.check(mode))
    auto = isinstance(max_disparity, str) and max_disparity.strip().lower() == "auto"
    top = DEFAULT_MAX_DISPARITY if auto else int(MAX_DISPARITY.check(max_disparity))
    if min_confidence is not None:
        min_confidence = float(MIN_CONFIDENCE.check(min_confidence))
    if budget_ms is not None:
        budget_ms = float(BUDGET.check(budget_ms))
    if levels is not None and m is Mode.QUANTIZED:
        levels = int(LEVELS.check(levels))
    if range_px is not None:
        if m is not Mode.SELECTIVE:
            raise UserError(
                f"{setting('range')} restricts the selective mode only; use {setting('mode', 'selective')}, "
                f"or lower {setting('max_disparity')} to bound the {m.value} search"
            )
        range_px = (float(RANGE.check(range_px[0])), float(RANGE.check(range_px[1])))
    return DepthRequest(
        mode=m,
        planes=tuple(planes) if m in (Mode.BINARY, Mode.QUANTIZED) else (),
        levels=levels if m is Mode.QUANTIZED else None,
        spacing=Spacing(SPACING.check(spacing)) if m is Mode.QUANTIZED else Spacing.DISPARITY,
        range=range_px if m is Mode.SELECTIVE else None,
        budget_ms=budget_ms,
        max_disparity=top,
        calibration=calibration,
        auto_range=auto,  # binary and selective: SGBM bounds its search by it (Bi3D needs no bound there)
        min_confidence=DEFAULT_MIN_CONFIDENCE if min_confidence is None else min_confidence,
    )
