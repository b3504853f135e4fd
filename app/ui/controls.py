"""The control panel: every widget edits ``Settings``; the panel turns them into requests.

Depth-request changes are debounced (a burst of slider moves becomes one request);
engine, display and flow changes are reported at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QSignalBlocker, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app import vocabulary
from app.engine.session import OVER_BUDGET, Session, plural
from app.engine.types import Calibration, DepthRequest, DepthResult, Mode, Spacing
from app.ui.folders import FolderMemory
from app.ui.log_slider import LogSlider
from app.ui.range_slider import RangeSlider
from app.ui.settings import FLOW_VIEWS, Settings

# of an answer over the budget: the engine has now measured this frame's costs
NEXT_FITS = "costs now measured: the next answer fits better"
# the engine's work before the budgeted answer, which ``took`` does not count: the vertical
# alignment (measured on a new view, applied to each frame), and a new frame size's set-up
OUTSIDE_STAGES = (
    ("align", "the pair's vertical alignment"),
    ("probe", "measuring this size's costs"),
    ("runtime_setup", "choosing the runtime"),
    ("colour_check", "reading it in colour and in grey levels to choose"),
)
# the alignment's per-frame check (1-4 ms) read "(+1 ms before it: ...)" under every answer
OUTSIDE_SAID_MS = 10.0
COMPARE_TIP = (
    "SGBM's answer to the same pair beside Bi3D's, in the same colours (its errors in the Errors tab)"
)
BUDGET_TIP = (
    "latency budget of Bi3D's depth: it picks the planes or step that fit in this time "
    "(SGBM side by side, flow and drawing come on top of it)"
)
ANSWERING_AGAIN = "costs now measured: answering again"

DEBOUNCE_MS = 150
SWAP_LABEL = "Swap left and right images"


def _combo(items: tuple[str, ...] | list[str], current: str) -> QComboBox:
    box = QComboBox()
    box.addItems(list(items))
    box.setCurrentText(current)
    return box


class SteadyLabel(QLabel):
    """A word-wrapped label whose height grows with its texts but does not shrink back while they
    come (a budget's choice said in 2 lines, then 6, then 2, moved every control below it frame
    by frame, under the mouse: review); an empty text lets it shrink to its ``lines`` again."""

    def __init__(self, lines: int) -> None:
        super().__init__("")
        self.setWordWrap(True)
        # the room it keeps is below its words, not a blank line above them
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self._floor = lines * self.fontMetrics().lineSpacing()
        self.setMinimumHeight(self._floor)

    def setText(self, text: str) -> None:
        super().setText(text)
        if not text:
            self.setMinimumHeight(self._floor)
            return
        if not self.isVisible():  # not laid out yet: its width is not the panel's (a 2-line text
            return  # had 4 lines' room at the first answer)
        need = self.heightForWidth(self.width())
        if need > self.minimumHeight():
            self.setMinimumHeight(need)


class ControlsPanel(QWidget):
    requestChanged = Signal()
    engineChanged = Signal()
    compareChanged = Signal(bool)
    swapChanged = Signal(bool)
    displayChanged = Signal()
    flowChanged = Signal(str)

    def __init__(
        self,
        settings: Settings,
        flow_parameters: Callable[[str], tuple[Any, ...]] = lambda _name: (),
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.settings = settings
        self._flow_parameters = flow_parameters  # the session's: a backend's own parameters
        self.calibration: Calibration | None = None
        self._running_engine = ""  # the engine that runs, once the window says (set_running_engine)
        self._depth_spacing_wanted = False  # depth spacing chosen, shown as disparity while uncalibrated
        self._debounce = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self._debounce.timeout.connect(self.requestChanged.emit)
        layout = QVBoxLayout(self)
        layout.addWidget(self._depth_group())
        layout.addWidget(self._engine_group())
        layout.addWidget(self.sgbm_group)
        layout.addWidget(self._display_group())
        layout.addStretch(1)
        # Enter in a number box applies it and gives the keys back to the window: T, N, Space did
        # nothing after a typed 0.10 (review); Tab and clicks move focus as before
        for box in self.findChildren(QAbstractSpinBox):
            box.editingFinished.connect(lambda box=box: box.clearFocus() if box.hasFocus() else None)
        self._update_visibility()
        self._update_applicable()

    # ---- groups --------------------------------------------------------------------------
    def _depth_group(self) -> QGroupBox:
        s = self.settings
        box = QGroupBox("Depth")
        form = QFormLayout(box)
        self.mode = _combo(vocabulary.MODE.choices, s.mode)
        self.mode.currentTextChanged.connect(self._on_mode)
        form.addRow("Mode", self.mode)
        self.plane = QSlider(Qt.Orientation.Horizontal)
        self.plane.setRange(0, s.max_disparity)
        self.plane.setValue(round(s.plane_px))
        self.plane.valueChanged.connect(lambda v: self._set("plane_px", float(v)))
        self.plane_label = QLabel()
        self.plane_label.setWordWrap(True)
        form.addRow("Plane", self.plane)
        form.addRow("", self.plane_label)
        self.levels = QSpinBox()
        self.levels.setRange(int(vocabulary.LEVELS.minimum or 1), int(vocabulary.LEVELS.maximum or 1))
        self.levels.setValue(s.levels)
        self.levels.valueChanged.connect(lambda v: self._set("levels", int(v)))
        form.addRow("Levels", self.levels)
        self.spacing = _combo(vocabulary.SPACING.choices, s.spacing)
        self.spacing.currentTextChanged.connect(self._on_spacing)
        form.addRow("Spacing", self.spacing)
        self.range = RangeSlider(0, s.max_disparity)
        self.range.set_values(*(round(v) for v in s.range_px))
        self.range.rangeChanged.connect(lambda lo, hi: self._set("range_px", (float(lo), float(hi))))
        self.range_label = QLabel()
        self.range_label.setWordWrap(True)
        form.addRow("Range", self.range)
        form.addRow("", self.range_label)
        self.max_disparity = QSpinBox()
        self.max_disparity.setRange(
            int(vocabulary.MAX_DISPARITY.minimum or 16), int(vocabulary.MAX_DISPARITY.maximum or 192)
        )
        self.max_disparity.setSingleStep(16)
        self.max_disparity.setSuffix(" px")
        self.max_disparity.setValue(s.max_disparity)
        self.max_disparity.valueChanged.connect(self._on_max_disparity)
        self.max_disparity_auto = QCheckBox("auto")
        self.max_disparity_auto.setToolTip(
            "continuous and quantized: estimate each frame's disparity range and sweep only that far "
            f"(at most {vocabulary.DEFAULT_MAX_DISPARITY} px); off: sweep to the number beside"
        )
        # as wide as its longest text ("auto: 192 px"), so that the panel does not move when it changes
        self.max_disparity_auto.setText(f"auto: {vocabulary.DEFAULT_MAX_DISPARITY} px")
        self.max_disparity_auto.setMinimumWidth(self.max_disparity_auto.sizeHint().width())
        keep = self.max_disparity_auto.sizePolicy()
        keep.setRetainSizeWhenHidden(True)  # hidden in binary and selective mode: the row does not move
        self.max_disparity_auto.setSizePolicy(keep)
        self.max_disparity_auto.setText("auto")
        self.max_disparity_auto.setChecked(s.max_disparity_auto)
        self.max_disparity_auto.toggled.connect(self._on_max_disparity_auto)
        row = QHBoxLayout()
        row.addWidget(self.max_disparity, 1)
        row.addWidget(self.max_disparity_auto)
        form.addRow("Max disparity", row)
        self.min_confidence = QSlider(Qt.Orientation.Horizontal)
        self.min_confidence.setRange(0, 100)
        self.min_confidence.setValue(round(100 * s.min_confidence))
        self.min_confidence.setToolTip(vocabulary.MIN_CONFIDENCE.help)
        self.min_confidence.valueChanged.connect(self._on_min_confidence)
        # a number to type beside the slider: dragging gave 0.09 or 0.11, never the default back (review)
        self.min_confidence_box = QDoubleSpinBox()
        self.min_confidence_box.setRange(0.0, 1.0)
        self.min_confidence_box.setSingleStep(0.01)
        self.min_confidence_box.setDecimals(2)
        self.min_confidence_box.setValue(s.min_confidence)
        # taken when typed (Enter, Tab, leaving the box): each key's value, sent on to the slider
        # and back, rewrote the text under the cursor ("0.25" typed became 0.20 or 0.00: review)
        self.min_confidence_box.setKeyboardTracking(False)
        self.min_confidence_box.setToolTip(
            f"{vocabulary.MIN_CONFIDENCE.help} (default {vocabulary.MIN_CONFIDENCE.default:g})"
        )
        self.min_confidence_box.valueChanged.connect(lambda v: self.min_confidence.setValue(round(100 * v)))
        conf_row = QHBoxLayout()
        conf_row.addWidget(self.min_confidence, 1)
        conf_row.addWidget(self.min_confidence_box)
        form.addRow("Min confidence", conf_row)
        self.budget_on = QCheckBox("Budget")
        self.budget_on.setToolTip(BUDGET_TIP)
        self.budget_on.setChecked(s.budget_on)
        self.budget_on.toggled.connect(lambda v: self._set("budget_on", bool(v)))
        # logarithmic: the budgets that matter on a CPU (20-400 ms) took an eighth of a linear track
        self.budget = LogSlider(int(vocabulary.BUDGET.minimum or 1), int(vocabulary.BUDGET.maximum or 3000))
        self.budget.setToolTip("latency budget, 5 ms to 3 s (equal steps are equal ratios)")
        self.budget.set_number(s.budget_ms)
        self.budget_on.toggled.connect(lambda _: self._update_applicable())  # live only when it applies
        self.budget.numberChanged.connect(lambda v: self._set("budget_ms", float(v)))
        self.budget.numberChanged.connect(self._show_budget)
        # room for its usual two lines before the first answer: the panel below does not jump then
        self.budget_label = SteadyLabel(lines=2)
        self.coarsest_over = False  # the last answer shown was the coarsest, predicted over its budget
        form.addRow(self.budget_on, self.budget)
        form.addRow("", self.budget_label)
        # as wide as its widest text, so the slider beside it does not move under the cursor
        self._show_budget(self.budget.maximum_number())
        self.budget_on.setMinimumWidth(self.budget_on.sizeHint().width())
        self._show_budget(self.budget.number())
        self._rows: dict[QWidget, QFormLayout] = {
            w: form for w in (self.plane, self.levels, self.spacing, self.range)
        }
        return box

    def _engine_group(self) -> QGroupBox:
        """One control per engine setting, built from its description in the vocabulary."""
        s = self.settings
        box = QGroupBox("Engine")
        form = QFormLayout(box)
        sgbm_box = QGroupBox("SGBM")
        sgbm_form = QFormLayout(sgbm_box)
        self.engine_controls: dict[str, QWidget] = {}
        self.swap_views = QCheckBox(SWAP_LABEL)
        self.swap_views.setToolTip(
            "the cameras were given the wrong way round: take the source's right image as the left "
            "camera's (after rectification; recordings keep the pairs as captured)"
        )
        self.swap_views.setChecked(s.swap_views)
        self.swap_views.toggled.connect(self._on_swap)
        form.addRow("", self.swap_views)
        for setting in vocabulary.ENGINE_SETTINGS:
            widget = self._setting_control(setting)
            self.engine_controls[setting.name] = widget
            if setting.name == "device" and isinstance(widget, QComboBox):
                _grey_cuda(widget)
            target = sgbm_form if setting.target.startswith("sgbm.") else form
            if setting.kind == "switch":
                target.addRow("", widget)
            else:
                target.addRow(setting.label, widget)
            if setting.name == "engine":
                self.compare = QCheckBox("SGBM side by side")
                self.compare.setToolTip(COMPARE_TIP)
                self.compare.setChecked(s.compare)
                self.compare.toggled.connect(self._on_compare)
                form.addRow("", self.compare)
        self.sgbm_group = sgbm_box
        self.flow = _combo(vocabulary.FLOW.choices, s.flow)
        self.flow.currentTextChanged.connect(self._on_flow)
        form.addRow(vocabulary.FLOW.label, self.flow)
        # the method's own parameters are rows of this form, under the method (a form of their
        # own inside it set its "Preset" box apart from every other row's: review)
        self._flow_host = form
        self.flow_param_boxes: list[QComboBox] = []
        self.flow_values: dict[str, object] = {}
        self.flow_status = QLabel("")
        self.flow_status.setWordWrap(True)
        form.addRow("", self.flow_status)
        self._build_flow_params(s.flow)
        self.flow_view = _combo(FLOW_VIEWS, s.flow_view)
        self.flow_view.currentTextChanged.connect(lambda v: self._set_display("flow_view", v))
        form.addRow("Flow shown as", self.flow_view)
        self.flow_max = QDoubleSpinBox()
        self.flow_max.setRange(0, 500)
        self.flow_max.setSpecialValueText("automatic")  # 0 px: scale to the frame's flow
        self.flow_max.setValue(s.flow_max)
        self.flow_max.setSuffix(" px")
        self.flow_max.setToolTip("clamp for flow colours and arrows; 0: automatic")
        self.flow_max.valueChanged.connect(lambda v: self._set_display("flow_max", float(v)))
        form.addRow("Max flow", self.flow_max)
        return box

    def _setting_control(self, setting: vocabulary.Setting) -> QWidget:
        """The widget for one engine setting, bound to ``settings.<name>``."""
        name, current = setting.name, getattr(self.settings, setting.name)
        widget: QWidget
        if setting.kind == "choice":
            combo = _combo(setting.choices, str(current))
            combo.currentTextChanged.connect(lambda v: self._set_engine(name, v))
            widget = combo
        elif setting.kind == "switch":
            check = QCheckBox(setting.label)
            check.setChecked(bool(current))
            check.toggled.connect(lambda on: self._set_engine(name, bool(on)))
            widget = check
        elif setting.kind == "integer":
            spin = QSpinBox()
            spin.setRange(int(setting.minimum or 0), int(setting.maximum or 10**6))
            spin.setSingleStep(2 if setting.odd else 1)
            spin.setSuffix(setting.unit)
            spin.setValue(int(current))
            # an arrow click applies at once, typed digits on Enter or leaving the box (editingFinished
            # alone left the arrows' 5 -> 9 px unapplied: SGBM's pane and scores stayed old)
            spin.setKeyboardTracking(False)
            spin.valueChanged.connect(lambda v: self._set_engine(name, int(v)))
            widget = spin
        else:
            widget = self._path_control(name, str(current))
        widget.setToolTip(setting.help)
        return widget

    def _path_control(self, name: str, current: str) -> QWidget:
        holder = QWidget()
        row = QHBoxLayout(holder)
        row.setContentsMargins(0, 0, 0, 0)
        edit = QLineEdit(current)
        edit.setPlaceholderText("bundled default")
        edit.editingFinished.connect(lambda: self._set_engine(name, edit.text().strip()))
        browse = QPushButton("…")
        browse.setFixedWidth(28)
        browse.clicked.connect(lambda: self._browse_weights(edit, name))
        row.addWidget(edit)
        row.addWidget(browse)
        return holder

    def _build_flow_params(self, name: str) -> None:
        """Controls for the chosen backend's own parameters, as the backend describes them."""
        for box in self.flow_param_boxes:
            self._flow_host.removeRow(box)
        self.flow_param_boxes = []
        self.flow_values = {}
        row = self._flow_host.getWidgetPosition(self.flow)[0] + 1  # type: ignore[index]
        for param in self._flow_parameters(name):
            # a switch reads off / on (it read False / False: review)
            shown = {c: ("on" if c else "off") if isinstance(c, bool) else str(c) for c in param.choices}
            box = _combo(list(shown.values()), shown[param.default])
            self.flow_values[param.name] = param.default
            choices = {text: c for c, text in shown.items()}
            box.currentTextChanged.connect(
                lambda text, p=param.name, c=choices: self._set_flow_param(p, c[text])
            )
            self._flow_host.insertRow(row + len(self.flow_param_boxes), param.label, box)
            self.flow_param_boxes.append(box)

    def _set_flow_param(self, name: str, value: object) -> None:
        self.flow_values[name] = value
        self.flowChanged.emit(self.settings.flow)

    def _display_group(self) -> QGroupBox:
        s = self.settings
        box = QGroupBox("Display")
        form = QFormLayout(box)
        self.colormap = _combo(vocabulary.COLORMAP.choices, s.colormap)
        self.colormap.currentTextChanged.connect(lambda v: self._set_display("colormap", v))
        form.addRow("Colour map", self.colormap)
        self.auto_range = QCheckBox("Automatic range")
        self.auto_range.setChecked(s.auto_range)
        self.auto_range.toggled.connect(lambda v: self._set_display("auto_range", bool(v)))
        self.auto_range.toggled.connect(lambda _v: self._update_applicable())
        form.addRow("", self.auto_range)
        self.display_max = QDoubleSpinBox()
        self.display_max.setRange(1, 1000)
        self.display_max.setValue(s.display_max)
        self.display_max.setSuffix(" px")
        self.display_max.valueChanged.connect(lambda v: self._set_display("display_max", float(v)))
        form.addRow("Fixed max", self.display_max)
        return box

    # ---- state -------------------------------------------------------------------------
    def _set(self, name: str, value: object) -> None:
        setattr(self.settings, name, value)
        self._update_labels()
        self._debounce.start()

    def _show_budget(self, ms: int) -> None:
        self.budget_on.setText(f"Budget {ms} ms")
        if self.budget_label.text() and self.budget_on.isChecked() and self.budget.isEnabled():
            # the last answer's choice was for another budget (mid-drag, "Budget 3000 ms" stood
            # beside "chose 5 quantized planes, took 95 ms": review): until the new answer
            self.budget_label.setText(f"answering within {ms} ms…")

    def _set_engine(self, name: str, value: object) -> None:
        if getattr(self.settings, name) != value:
            setattr(self.settings, name, value)
            self._update_applicable()
            self.engineChanged.emit()

    def show_engine_values(self, values: dict[str, Any]) -> None:
        """Put the engine controls (and settings) back to ``values``, the engine's in use, without
        applying them again: a choice that could not run (fp16 on the CPU, a file that is no
        checkpoint) stayed shown, and saved, beside an engine that ran otherwise."""
        for name, value in values.items():
            setattr(self.settings, name, value)
            widget = self.engine_controls.get(name)
            # a path's control is a row holding its field and a browse button
            target = (
                widget
                if isinstance(widget, (QComboBox, QCheckBox, QSpinBox)) or widget is None
                else widget.findChild(QLineEdit)
            )
            if target is None:
                continue
            with QSignalBlocker(target):
                if isinstance(target, QComboBox):
                    target.setCurrentText(str(value))
                elif isinstance(target, QCheckBox):
                    target.setChecked(bool(value))
                elif isinstance(target, QSpinBox):
                    target.setValue(int(value))
                elif isinstance(target, QLineEdit):
                    target.setText(str(value))
        self._update_applicable()

    def _update_applicable(self) -> None:
        """Grey the controls that the current choices make moot: Bi3D's settings while SGBM is
        the engine, CUDA graphs on the CPU, the fixed colour maximum under the automatic range."""
        bi3d = self.settings.engine != "sgbm"
        # the plane check decides binary and quantized answers only (live in continuous mode, it
        # changed nothing and said nothing: review)
        planes = Mode(self.settings.mode) in (Mode.BINARY, Mode.QUANTIZED)
        for name, widget in self.engine_controls.items():
            if name in vocabulary.BI3D_ONLY:
                moot = (
                    (name == "cuda_graphs" and self.settings.device == "cpu")
                    or (name == "plane_check" and not planes)
                    or (name == "subpixel" and planes)  # continuous and selective answers only
                )
                widget.setEnabled(bi3d and not moot)
        # Bi3D's continuous and selective answers are masked by their rating; a plane's side is not
        # (it moved and changed nothing in binary mode: review)
        rated = bi3d and not planes
        # Bi3D's budget picks planes or a step; one binary plane and SGBM have none to pick (it
        # stayed live there and every move computed the frame again, changing nothing: review)
        budgeted = self._budget_applies()
        self.budget_on.setEnabled(budgeted)
        self.budget.setEnabled(budgeted and self.budget_on.isChecked())
        moot_tip = "the budget applies to Bi3D's quantized, selective and continuous modes"
        self.budget_on.setToolTip(BUDGET_TIP if budgeted else moot_tip)
        self.min_confidence.setEnabled(rated)
        self.min_confidence_box.setEnabled(rated)
        self.display_max.setEnabled(not self.settings.auto_range)
        # SGBM beside SGBM compares nothing (it stayed live with Engine = sgbm: review), nor where
        # auto fell back to SGBM; the tick is kept for when Bi3D is the engine again
        beside = bi3d and self._running_engine != "sgbm"
        self.compare.setEnabled(beside)
        self.compare.setToolTip(
            COMPARE_TIP if beside else "SGBM is the engine: choose bi3d (Engine) to compare the two"
        )
        flowing = self.settings.flow != "off"  # how flow is drawn matters only when it is computed
        self.flow_view.setEnabled(flowing)
        self.flow_max.setEnabled(flowing)

    def _budget_applies(self) -> bool:
        """Bi3D's budget picks planes or a step; one binary plane and SGBM have none to pick."""
        return self.settings.engine != "sgbm" and Mode(self.settings.mode) is not Mode.BINARY

    def _set_display(self, name: str, value: object) -> None:
        setattr(self.settings, name, value)
        self.displayChanged.emit()

    def _on_max_disparity(self, top: int) -> None:
        """The number bounds the plane and range sliders, which show the chosen plane and range
        clamped to it; the choices themselves are kept (a 32 typed for continuous depth cut the
        binary plane and the selective range to 32 px for good, saved with the settings)."""
        s = self.settings
        s.max_disparity = int(top)
        with QSignalBlocker(self.range):
            self.range.set_maximum(top)
            self.range.set_values(*(round(v) for v in s.range_px))
        with QSignalBlocker(self.plane):
            self.plane.setMaximum(top)
            self.plane.setValue(round(s.plane_px))
        self.range.update()
        self._update_labels()
        self._debounce.start()

    def shown_plane(self) -> float:
        """The binary plane in use: the chosen one, at most the maximum disparity."""
        return min(self.settings.plane_px, float(self.plane.maximum()))

    def shown_range(self) -> tuple[float, float]:
        """The selective range in use: the chosen one, clamped as its slider shows it."""
        lo, hi = self.range.values()
        return float(lo), float(hi)

    def _on_max_disparity_auto(self, on: bool) -> None:
        self._set("max_disparity_auto", bool(on))
        self._update_visibility()

    def _on_spacing(self, spacing: str) -> None:
        if self.calibration is not None:  # the user's own choice, not the fallback without one
            self._depth_spacing_wanted = False
        self._set("spacing", spacing)

    def _on_min_confidence(self, value: int) -> None:
        with QSignalBlocker(self.min_confidence_box):  # the box's own change came from here
            self.min_confidence_box.setValue(value / 100)
        self._set("min_confidence", value / 100)

    def _on_mode(self, mode: str) -> None:
        self._set("mode", mode)
        self._update_visibility()

    def _on_swap(self, on: bool) -> None:
        self.settings.swap_views = bool(on)
        self.swapChanged.emit(bool(on))

    def _on_compare(self, on: bool) -> None:
        self.settings.compare = bool(on)
        self.compareChanged.emit(bool(on))

    def _on_flow(self, name: str) -> None:
        self.settings.flow = name
        self._build_flow_params(name)
        self._update_applicable()
        self.flowChanged.emit(name)

    def _browse_weights(self, edit: QLineEdit, name: str) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Bi3D weights",
            FolderMemory(self.settings).start(),
            "Checkpoints (*.pt *.pth *.tar);;All (*)",
        )
        if path:
            FolderMemory(self.settings).chose(path)
            edit.setText(path)
            self._set_engine(name, path)

    def _update_visibility(self) -> None:
        mode = Mode(self.settings.mode)
        shown = {
            self.plane: mode is Mode.BINARY,
            self.levels: mode is Mode.QUANTIZED,
            self.spacing: mode is Mode.QUANTIZED,
            self.range: mode is Mode.SELECTIVE,
        }
        for widget, visible in shown.items():
            self._rows[widget].setRowVisible(widget, visible)
        # continuous depth (and quantized levels) with auto sweep to each frame's reach: the number
        # does not apply there (binary and selective depth take their planes from it)
        swept = mode in (Mode.CONTINUOUS, Mode.QUANTIZED)
        self.max_disparity.setEnabled(not (swept and self.settings.max_disparity_auto))
        # ticked beside a number in use read as if auto applied there too (two reviews; greyed out, it
        # still read so): binary and selective depth have the number alone, the sliders' reach
        self.max_disparity_auto.setVisible(swept)
        self.max_disparity.setToolTip(
            "the deepest disparity searched"
            if swept
            else f"how far the {'plane' if mode is Mode.BINARY else 'range'} slider reaches"
        )
        self._update_applicable()  # the plane check and sub-pixel matching apply by mode
        self.plane_label.setVisible(mode is Mode.BINARY)
        self.range_label.setVisible(mode is Mode.SELECTIVE)
        self._update_labels()

    def _update_labels(self) -> None:
        self.plane_label.setText(self._px_text(self.shown_plane()))
        lo, hi = self.shown_range()
        self.range_label.setText(f"{self._px_text(lo)} to {self._px_text(hi)}")

    def _px_text(self, px: float) -> str:
        """'30 px (3.14 m)', with no-break spaces: a narrow panel wraps between the two ends of a
        range, not inside a figure ('(2.11' / 'm)'); a placeholder baseline's depth is in baselines."""
        nb = "\u00a0"
        if self.calibration is None:
            return f"{px:g}{nb}px"
        z = float(self.calibration.depth_m(np.array([px]))[0])
        unit = self.calibration.depth_unit
        return f"{px:g}{nb}px{nb}({z:.2f}{nb}{unit})" if np.isfinite(z) else f"{px:g}{nb}px{nb}(far)"

    # ---- used by the controller -----------------------------------------------------------
    def set_running_engine(self, name: str) -> None:
        """The engine that runs (``auto`` may have fallen back to SGBM), for what it makes moot."""
        self._running_engine = name
        self._update_applicable()

    def set_calibration(self, calibration: Calibration | None) -> None:
        self.calibration = calibration
        depth_ok = calibration is not None
        self.spacing.model().item(1).setEnabled(depth_ok)  # type: ignore[attr-defined]
        if not depth_ok and self.settings.spacing == Spacing.DEPTH.value:
            self.spacing.setCurrentText(Spacing.DISPARITY.value)
            self._depth_spacing_wanted = True  # given back when a calibration comes (another source)
        elif depth_ok and self._depth_spacing_wanted:
            self._depth_spacing_wanted = False
            self.spacing.setCurrentText(Spacing.DEPTH.value)
        self._update_labels()

    def request(self) -> DepthRequest:
        """A frozen request copied from the current settings."""
        s = self.settings
        mode = Mode(s.mode)
        return vocabulary.depth_request(
            s.mode,
            planes=(self.shown_plane(),) if mode is Mode.BINARY else (),
            levels=s.levels,
            spacing=s.spacing if self.calibration is not None else Spacing.DISPARITY.value,
            range_px=self.shown_range() if mode is Mode.SELECTIVE else None,
            budget_ms=s.budget_ms if s.budget_on and self._budget_applies() else None,
            max_disparity="auto" if s.max_disparity_auto else s.max_disparity,
            calibration=self.calibration,
            min_confidence=s.min_confidence,
        )

    def show_choice(
        self, result: DepthResult, frame: dict[str, float] | None = None, over: str = NEXT_FITS
    ) -> bool:
        """What the engine chose under the budget, and what it took, and whether that was over the
        budget (``over``: what is said of that); ``frame``: the frame's stage timings (SGBM beside
        it is said apart: a 340 ms budgeted answer read as the 625 ms frame's)."""
        over_budget = False
        self.coarsest_over = False
        took = result.timings.get("total", 0.0)
        # outside the budget: the latency panel's total held them (review: 330 against 483 ms)
        before = [
            (result.timings.get(k, 0.0), w)
            for k, w in OUTSIDE_STAGES
            if result.timings.get(k, 0.0) >= OUTSIDE_SAID_MS
        ]
        extra = f" (+{sum(ms for ms, _ in before):.0f} ms before it: {', '.join(w for _, w in before)})"
        took_text = f"took {took:.0f} ms" + (extra if before else "")
        if result.choice:
            planes = int(result.choice.get("planes", len(result.planes)))
            step = result.choice.get("step_px")
            noun = "quantized plane" if result.choice.get("quantized") else "plane"  # continuous did not fit
            every = f" every {step:g} px" if step else ""
            how = ""
            coarse = result.choice.get("coarse_px")
            if coarse:  # a search: its coarse sweep's planes, then passes per pixel ("every 3 px": review)
                passes = int(result.choice.get("passes", 0))
                how = "coarse-to-fine, "
                every = f" every {coarse:g} px and {passes} per-pixel pass{'' if passes == 1 else 'es'}"
            plain = " without sub-pixel matching" if result.choice.get("subpixel") == 0.0 and step else ""
            text = f"chose {how}{plural(planes, noun)}{every}{plain}, {took_text}"
            cheapest = result.choice.get("cheapest_ms")
            if cheapest is not None:  # the reason was in the pane's title alone, cut at 1366 px (review)
                quantized = bool(result.choice.get("quantized"))
                # the cheapest: read as the whole sweep's time (2.5 s on aloe), "806 ms" looked wrong (review)
                wanted = (
                    "the cheapest continuous depth" if quantized else "selective depth every 12 px or finer"
                )
                text = f"{wanted} needs about {cheapest:.0f} ms: {text}"
            # the budget this answer was planned for: the slider may have moved on since
            budget = float(result.choice.get("budget_ms", self.settings.budget_ms))
            over_budget = self.settings.budget_on and took > OVER_BUDGET * budget
            # nothing predicted to fit: the coarsest answer was chosen already, and "the next answer
            # fits better" came under every frame of a 15 ms budget that 2 planes took 52 ms of (review)
            predicted = float(result.choice.get("predicted_ms", 0.0))
            self.coarsest_over = predicted > budget
            if over_budget:
                if over and self.coarsest_over:
                    over = f"the coarsest answer here was predicted at {predicted:.0f} ms"
                text += f", over the {budget:g} ms budget" + (f" ({over})" if over else "")
        elif result.engine == "sgbm":  # a matcher over every disparity: no planes to count
            text = took_text
        else:
            text = f"{plural(len(result.planes), 'plane')}, {took_text}"
        if result.searched is not None:
            text += f"; searched {result.searched[0]:g}-{result.searched[1]:g} px (auto)"
        beside = (frame or {}).get("sgbm")
        if beside:
            text += f"; SGBM beside it {beside:.0f} ms more"
        self.budget_label.setText(text)
        # the greyed number beside "auto" is not what was swept: say what was
        reach = "auto" if result.searched is None else f"auto: {result.searched[1]:g} px"
        self.max_disparity_auto.setText(reach)
        return over_budget

    def apply_now(self) -> None:
        """A change waiting out the debounce is sent now."""
        if self._debounce.isActive():
            self._debounce.stop()
            self.requestChanged.emit()

    def show_refused(self) -> None:
        """The engine refused these settings (a budget below its fastest answer): the choice of the
        last answer ("chose 5 quantized planes, took 175 ms") no longer describes them."""
        self.budget_label.setText("no answer at these settings (see the message); the last one stays shown")

    def set_flow_status(self, text: str) -> None:
        self.flow_status.setText(text)


def _grey_cuda(combo: QComboBox) -> None:
    """The "cuda" choice greyed, with why, where no CUDA device is (picking it gave an error and
    fell back to cpu: review)."""
    index = combo.findText("cuda")
    if index < 0 or Session.cuda_available():
        return
    item = combo.model().item(index)  # type: ignore[attr-defined]
    item.setEnabled(False)
    item.setToolTip("no CUDA device on this machine (or torch was installed without CUDA)")
