"""Stereo calibration: raw rigs, rectification maps, and calibration files.

A rectified pair is described by a `Calibration` (focal length, baseline, principal point,
``doffs``); a raw rig by a `StereoRig` (both cameras' intrinsics, distortion and the pose of
the right camera). Files: OpenCV FileStorage YAML/XML as OpenCV's ``stereo_calib`` sample
writes it, a pair of ROS ``camera_info`` files (read in ``app.engine.calibration.ros`` with
PyYAML), Middlebury ``calib.txt`` and stereodemo JSON; `load_calibration` tells them apart
by name and content. The rig and rectification live in
``app.engine.calibration.rig``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from app.engine.calibration.kalibr import is_kalibr, read_kalibr
from app.engine.calibration.rig import FIELD_SHAPES, StereoRig, calibration_from_projections, shape_text
from app.engine.calibration.ros import camera_info, is_camera_info, read_ros_camera_info_pair, read_yaml
from app.engine.calibration.validate import check_rig, check_values, fit_to_frames
from app.engine.errors import UserError
from app.engine.types import Calibration

_MATRIX = re.compile(r"\[([^\]]*)\]")


# --- Middlebury calib.txt ---------------------------------------------------------------------


@dataclass(frozen=True)
class MiddleburyCalib:
    calibration: Calibration
    width: int | None
    height: int | None
    ndisp: int | None
    note: str | None = None  # a doffs taken from cam1, or one that disagrees with it


def read_middlebury_calib(path: str | Path) -> MiddleburyCalib:
    """Middlebury ``calib.txt``: ``cam0=[f 0 cx; 0 f cy; 0 0 1]``, ``doffs``, ``baseline`` (mm)."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or "not a text file"
        raise UserError(f"cannot read calibration {path}: {why}; check the path") from exc
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            fields[key.strip()] = value.strip()

    def number(key: str, default: float | None = None) -> float:
        if key not in fields and default is not None:
            return default
        try:
            return float(fields[key])
        except (KeyError, ValueError):
            state = "missing" if key not in fields else f"malformed ({fields[key]!r})"
            raise UserError(
                f"{path}: field {key!r} is {state}; a Middlebury calib.txt needs "
                "cam0=[f 0 cx; 0 f cy; 0 0 1] and baseline=mm"
            ) from None

    cam0 = _matrix(fields.get("cam0", ""))
    if cam0 is None:
        state = "missing" if "cam0" not in fields else "malformed"
        raise UserError(f"{path}: field 'cam0' is {state}; write it as cam0=[f 0 cx; 0 f cy; 0 0 1]")
    doffs, note = _doffs(fields, cam0, number, path)
    calibration = Calibration(
        focal_px=cam0[0],
        baseline_m=number("baseline") / 1000.0,
        cx=cam0[2],
        cy=cam0[5],
        doffs=doffs,
    )

    def opt_int(key: str) -> int | None:
        if key not in fields:
            return None
        try:
            value = float(fields[key])
        except ValueError:  # "ndisp=abc" was passed over unsaid: the search went to auto
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise UserError(f"{path}: field {key!r} is {fields[key]!r}; it must be a positive number")
        return round(value)

    check_values(calibration, str(path), "cam0", "baseline", "mm")
    return MiddleburyCalib(calibration, opt_int("width"), opt_int("height"), opt_int("ndisp"), note)


DOFFS_AGREE_PX = 0.5  # doffs is cam1's cx - cam0's cx (Middlebury's definition); beyond this, said


def _matrix(text: str) -> list[float] | None:
    """``[f 0 cx; 0 f cy; 0 0 1]`` -> its 9 numbers, or None."""
    match = _MATRIX.search(text)
    try:
        values = [float(v) for v in match.group(1).replace(";", " ").split()] if match else []
    except ValueError:
        return None
    return values if len(values) == 9 else None


def _doffs(
    fields: dict[str, str], cam0: list[float], number: Callable[..., float], path: Path
) -> tuple[float, str | None]:
    """The x difference of the principal points, and a note: a file without a doffs line read as
    0 put every depth ~1.8x too far on the demo, unsaid; one that disagrees with its cam1 too."""
    cam1 = _matrix(fields.get("cam1", ""))
    from_cams = None if cam1 is None else cam1[2] - cam0[2]
    if "doffs" not in fields:
        if from_cams is None:
            return 0.0, None
        return from_cams, (
            f"{path} has no doffs line: taken as cam1's cx - cam0's cx = {from_cams:g} px (Middlebury's "
            "definition)"
        )
    doffs = number("doffs")
    if from_cams is not None and abs(doffs - from_cams) > DOFFS_AGREE_PX:
        return doffs, (
            f"{path}'s doffs={doffs:g} px disagrees with its cameras' principal points (cam1's cx - "
            f"cam0's cx = {from_cams:g} px): depths follow doffs; check the file"
        )
    return doffs, None


def middlebury_note(path: str | Path) -> str | None:
    """What reading a calib.txt noticed about its doffs (``read_middlebury_calib``), or None."""
    try:
        return read_middlebury_calib(path).note
    except UserError:
        return None


# --- stereodemo JSON --------------------------------------------------------------------------


def read_stereodemo_json(path: str | Path) -> Calibration:
    """stereodemo's calibration JSON: ``fx``, ``cx0``, ``cx1``, ``cy``, ``baseline_meters``, ...

    stereodemo computes Z = B * fx / (d - (cx0 - cx1)), so ``doffs`` is cx1 - cx0.
    """
    path = Path(path)
    data = _json(path)
    if not {"fx", "cx0", "cx", "baseline_meters"} & data.keys():
        raise UserError(
            f"{path} is JSON but not a calibration this app reads (stereodemo's has fx, cx0, cy, "
            "baseline_meters); give a stereodemo JSON, OpenCV YAML/XML, ROS camera_info, Kalibr or "
            "Middlebury calib.txt"
        )

    def number(*keys: str) -> float:
        for key in keys:
            if key in data:
                value = data[key]
                if isinstance(value, int | float) and not isinstance(value, bool):
                    return float(value)
                raise UserError(f"{path}: field {key!r} must be a number, got {value!r}; fix the file")
        raise UserError(f"{path}: stereodemo calibration has no field {keys[0]!r}; add it")

    cx0 = number("cx0", "cx")
    calibration = Calibration(
        focal_px=number("fx"),
        baseline_m=number("baseline_meters"),
        cx=cx0,
        cy=number("cy"),
        doffs=number("cx1", "cx0", "cx") - cx0,
    )
    return check_values(calibration, str(path), "fx", "baseline_meters")


def _json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read calibration {path} as JSON ({exc}); check the file") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object with fx, cx0, cy, baseline_meters; check the file")
    return data


# --- OpenCV FileStorage ---------------------------------------------------------------------

_OPENCV_KEYS: dict[str, tuple[str, ...]] = {  # our name -> names in files, the sample's first
    "K1": ("M1", "K1"),
    "D1": ("D1",),
    "K2": ("M2", "K2"),
    "D2": ("D2",),
    "R": ("R",),
    "T": ("T",),
    "R1": ("R1",),
    "R2": ("R2",),
    "P1": ("P1",),
    "P2": ("P2",),
    "Q": ("Q",),
}
_REQUIRED = ("K1", "D1", "K2", "D2", "R", "T")


def _storage(path: Path) -> cv2.FileStorage:
    """Parse YAML/XML with OpenCV from text, so that a bad file becomes our one-line error."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or "not a text file"
        raise UserError(f"cannot read calibration {path}: {why}; check the path") from exc
    if not text.lstrip().startswith(("<", "{", "%YAML:")):  # OpenCV's parser wants its directive
        text = "%YAML:1.0\n" + text
    try:
        fs = cv2.FileStorage(text, cv2.FILE_STORAGE_READ | cv2.FILE_STORAGE_MEMORY)
        ok = fs.isOpened() and fs.root().isMap()
    except (cv2.error, SystemError):  # the bindings raise SystemError for parser errors
        ok = False
    if not ok:
        raise UserError(f"{path} is not a readable YAML or XML calibration file; check the file")
    return fs


def _array(fs: cv2.FileStorage, keys: tuple[str, ...], path: Path) -> np.ndarray | None:
    """The first of ``keys`` present, as float64 (rows x cols when given); None if none is."""
    for key in keys:
        node = fs.getNode(key)
        if node.empty():
            continue
        seq = node.getNode("data") if node.isMap() else node
        items = [seq.at(i) for i in range(seq.size())] if seq.isSeq() else [seq]
        if not all(item.isInt() or item.isReal() for item in items):
            raise UserError(f"{path}: field {key!r} is malformed (expected numbers); fix the file")
        values = np.array([item.real() for item in items], dtype=np.float64)
        if node.isMap() and node.getNode("rows").isInt() and node.getNode("cols").isInt():
            shape = (int(node.getNode("rows").real()), int(node.getNode("cols").real()))
            if values.size != shape[0] * shape[1]:
                raise UserError(f"{path}: field {key!r} has {values.size} values for {shape[0]}x{shape[1]}")
        return values
    return None


def _image_size(fs: cv2.FileStorage, path: Path) -> tuple[int, int] | None:
    for wkey, hkey in (("image_width", "image_height"), ("width", "height")):
        w, h = _array(fs, (wkey,), path), _array(fs, (hkey,), path)
        if w is not None and h is not None and w.size == 1 and h.size == 1 and w[0] > 0 and h[0] > 0:
            return int(w[0]), int(h[0])
    size = _array(fs, ("imageSize", "image_size"), path)
    return (int(size[0]), int(size[1])) if size is not None and size.size == 2 else None


def _shaped(values: np.ndarray, name: str, key: str, path: Path) -> np.ndarray:
    shape = FIELD_SHAPES.get(name, (1, values.size))
    if values.size != int(np.prod(shape)):
        raise UserError(f"{path}: field {key!r} must be {shape_text(shape)} numbers, got {values.size}")
    return values.reshape(shape)


def _partner(path: Path) -> Path | None:
    """``intrinsics.yml`` <-> ``extrinsics.yml``, as OpenCV's stereo_calib sample writes them."""
    name = path.name.lower()
    for a, b in (("intrinsics", "extrinsics"), ("extrinsics", "intrinsics")):
        if a in name:
            stem = name.replace(a, b).rsplit(".", 1)[0]
            found = [
                p for p in path.parent.glob(f"{stem}.*") if p.suffix.lower() in (".yml", ".yaml", ".xml")
            ]
            return found[0] if found else None
    return None


def _opencv_fields(path: Path) -> tuple[dict[str, np.ndarray], tuple[int, int] | None]:
    fs = _storage(path)
    fields = {}
    for name, keys in _OPENCV_KEYS.items():
        value = _array(fs, keys, path)
        if value is not None:
            fields[name] = _shaped(value, name, keys[0], path)
    return fields, _image_size(fs, path)


def _is_image_list(path: Path) -> bool:
    """An OpenCV file holding only ``imagelist``, a sequence of file names."""
    fs = _storage(path)
    try:
        node = fs.getNode("imagelist")
        return not node.empty() and node.isSeq()
    finally:
        fs.release()


def _has_node(path: Path, name: str) -> bool:
    fs = _storage(path)
    try:
        return not fs.getNode(name).empty()
    finally:
        fs.release()


def _read_opencv(
    path: Path, second: Path | None, image_size: tuple[int, int] | None
) -> tuple[Calibration, StereoRig | None, tuple[int, int] | None]:
    """The file's geometry, its raw rig (None: rectified projections only) and the image size the
    file says (None: none; the rig is then built for ``image_size``, the frames')."""
    fields, size = _opencv_fields(path)
    other = second or (_partner(path) if any(k not in fields for k in _REQUIRED) else None)
    if other is not None:
        more, more_size = _opencv_fields(other)
        fields, size = more | fields, size or more_size
    missing = [_OPENCV_KEYS[k][0] for k in _REQUIRED if k not in fields]
    if missing and not fields and _is_image_list(path):
        raise UserError(
            f"{path} is an image list (the input of OpenCV's stereo_calib sample), not a calibration; "
            "calibrate its folder with 'bi3d-studio calib chessboard' (or the window's board capture)"
        )
    if missing and not fields and _has_node(path, "camera_matrix"):
        raise UserError(
            f"{path} holds one camera's calibration (camera_matrix), not a stereo rig's; give the rig's "
            "file (OpenCV's M1 D1 M2 D2 R T), or calibrate the pair with 'calib chessboard' (or the "
            "window's board capture)"
        )
    if missing:
        if set(missing) <= {"R", "T"}:
            hint = "give extrinsics.yml too"
        elif {"R", "T"} <= fields.keys():  # the extrinsics half alone (a review did not find how on)
            hint = (
                "this is the extrinsics half of an OpenCV stereo calibration: give intrinsics.yml with it "
                "(the first file, this one second: --calib intrinsics.yml --calib2 THIS), or name the two "
                "intrinsics.yml and extrinsics.yml side by side, which are then read together"
            )
        else:
            hint = "OpenCV stereo files need M1 D1 M2 D2 R T"
        raise UserError(f"{path}: no field {missing[0]!r}; {hint}")
    said = size
    size = size or image_size
    if size is None:
        if "P1" in fields and "P2" in fields:
            calibration = calibration_from_projections(fields["P1"], fields["P2"])
            return (
                check_values(calibration, str(path), "P1[0,0]", "baseline (-P2[0,3] / P2[0,0])"),
                None,
                None,
            )
        raise UserError(f"{path} has no image size (image_width, image_height); add them to the file")
    rig = check_rig(StereoRig(size, **fields), str(path))
    return _checked_rig(rig, path), rig, said


def _checked_rig(rig: StereoRig, path: Path) -> Calibration:
    """The rig's rectified geometry, range-checked; a swapped rig is named by its T."""
    rectified = rig.rectified()
    where = str(path)
    if rectified.baseline_m < 0:
        raise UserError(
            f"{where}: T = {np.round(rig.T, 4).tolist()} puts the right camera left of the left one "
            f"(baseline {rectified.baseline_m:g} m); swap the left and right images (or M1/M2, D1/D2)"
        )
    return check_values(rectified, where, "P1[0,0]", "baseline (-P2[0,3] / P2[0,0])")


# --- writing and loading ----------------------------------------------------------------------


BASELINE_UNKNOWN = "baseline_unknown"  # a field of ours: T is a 1 m placeholder (calib rectify)
FOCAL_GUESSED = "focal_guessed"  # a field of ours: K is a projective self-rectification's nominal camera


def write_opencv_yaml(
    path: str | Path, rig: StereoRig, baseline_known: bool = True, focal_guessed: bool = False
) -> None:
    """Write M1 D1 M2 D2 R T R1 R2 P1 P2 Q and the image size as OpenCV reads them (atomically);
    ``baseline_known`` False: T's length is a placeholder, marked by a ``baseline_unknown: 1``
    field (OpenCV's readers ignore it) so that depths read from the file are said to be in
    baselines.

    The format follows the suffix: ``.xml`` writes XML, anything else YAML.
    """
    from app.engine.formats import atomic_write

    rig = rig.with_rectification()
    kind = ".xml" if Path(path).suffix.lower() == ".xml" else ".yml"
    fs = cv2.FileStorage(kind, cv2.FILE_STORAGE_WRITE | cv2.FILE_STORAGE_MEMORY)
    fs.write("image_width", rig.image_size[0])
    fs.write("image_height", rig.image_size[1])
    for name, keys in _OPENCV_KEYS.items():
        value = getattr(rig, name)
        fs.write(keys[0], value.reshape(3, 1) if name == "T" else value)
    if not baseline_known:
        fs.write(BASELINE_UNKNOWN, 1)
    if focal_guessed:
        fs.write(FOCAL_GUESSED, 1)
    atomic_write(path, fs.releaseAndGetString().encode())


def is_rig_file(path: str | Path) -> bool:
    """Whether ``path`` holds a stereo rig in OpenCV's YAML/XML form (what ``write_opencv_yaml``
    writes; a rewrite may replace it), not a file of another kind (a Middlebury calib.txt)."""
    try:
        fields, _ = _opencv_fields(Path(path))
    except UserError:
        return False
    return {"K1", "K2", "R", "T"} <= fields.keys()


def baseline_unknown(path: str | Path) -> bool:
    """Whether ``path`` says its baseline is a placeholder (``write_opencv_yaml``)."""
    return _marked(path, BASELINE_UNKNOWN)


def focal_guessed(path: str | Path) -> bool:
    """Whether ``path`` says its focal length is a self-rectification's guess (``write_opencv_yaml``)."""
    return _marked(path, FOCAL_GUESSED)


def _marked(path: str | Path, field: str) -> bool:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return False
    return re.search(rf"^\s*{field}\s*:\s*1\b|<{field}>\s*1\s*<", text, re.M) is not None


def guessed_focal_note(calibration: Calibration, where: str) -> str:
    """Why metres from a self-rectification's rig are rough (its focal length is made up)."""
    return (
        f"{where}'s focal length ({calibration.focal_px:.0f} px) is a self-rectification's guess, so its "
        "depths in metres are rough (they scale with it): calibrate the cameras on a board for true metres"
    )


_OPENCV_HEADS = ("%YAML", "<?xml", "<opencv_storage")  # how OpenCV's (and this app's) YAML and XML begin


def load_calibration(
    path: str | Path, second: str | Path | None = None, image_size: tuple[int, int] | None = None
) -> tuple[Calibration, StereoRig | None]:
    """Any supported calibration file -> (rectified geometry, raw rig or None).

    ``second`` is the right camera's camera_info of a ROS pair, or the other half of an
    OpenCV ``intrinsics.yml``/``extrinsics.yml`` pair (found next to the first if not given).
    ``image_size`` (width, height) is used only when an OpenCV file does not record its size.
    The rig is None for formats that describe only a rectified pair (Middlebury, stereodemo).
    Every value is range-checked (`app.engine.calibration.validate`).
    """
    calibration, rig, _ = _load(Path(path), Path(second) if second else None, image_size)
    return calibration, rig


def declared_size(path: str | Path, second: str | Path | None = None) -> tuple[int, int] | None:
    """The frame size (w, h) a calibration file says it is for (a Middlebury calib.txt's width and
    height, a rig's image size), or None."""
    return _load(Path(path), Path(second) if second else None, None)[2]


def load_for_frames(
    path: str | Path, second: str | Path | None, frame_size: tuple[int, int]
) -> tuple[Calibration, StereoRig | None, str | None]:
    """`load_calibration` for frames of ``frame_size`` (w, h): a file made for another size
    is rescaled when the aspect ratio agrees (the note says so) and refused otherwise."""
    calibration, rig, size = _load(Path(path), Path(second) if second else None, frame_size)
    calibration, rig, note = fit_to_frames(calibration, rig, size, frame_size, str(path))
    units = baseline_note(calibration, str(path))
    doffs = middlebury_note(path) if _file_kind(Path(path))[0] == "middlebury" else None
    rough = (
        guessed_focal_note(calibration, str(path))
        if calibration.baseline_known and focal_guessed(path)
        else None
    )
    notes = (doffs, note, units, rough, projection_note(rig, str(path)))
    return calibration, rig, "; ".join(n for n in notes if n) or None


def projection_note(rig: StereoRig | None, where: str) -> str | None:
    """A note when a rig file's T and its rectified P2 give baselines more than 5 % apart (an
    edited T, or a P2 of another calibration): the depth follows P2, and nothing said so."""
    if rig is None or rig.P2 is None or rig.P1 is None:
        return None
    from_t = float(np.linalg.norm(rig.T))
    from_p = abs(float(rig.P2[0, 3] / rig.P2[0, 0])) if rig.P2[0, 0] else 0.0
    if from_t <= 0 or from_p <= 0 or abs(from_t - from_p) <= 0.05 * from_p:
        return None
    return (
        f"{where}: its T gives a {from_t:g} m baseline and its P2 {from_p:g} m; depths follow P2: "
        "check which is right (a T edited by hand, or a P2 of another calibration?)"
    )


SHORTEST_BASELINE_M = 0.002  # under this (2 mm) a baseline is more likely in another unit
LONGEST_BASELINE_M = 5.0  # past this a stereo rig's baseline is more likely millimetres
# where each kind of file writes the baseline, in the words of its format
BASELINE_FIELDS = {
    "opencv": "T",
    "ros": "the right camera's projection_matrix P[0,3], -fx x baseline,",
    "kalibr": "cam1's T_cn_cnm1 translation",
    "stereodemo": "baseline_meters",
    "middlebury": "baseline",
}


def baseline_field(path: str | Path) -> str:
    """Where the calibration file ``path`` writes its baseline ('T', a ROS pair's P[0,3], ...)."""
    try:
        kind, _ = _file_kind(Path(path))
    except (OSError, UserError):
        return "the baseline"
    return BASELINE_FIELDS[kind]


def baseline_note(calibration: Calibration, where: str) -> str | None:
    """A note when the file ``where`` says its baseline is a placeholder, or when the baseline
    is longer than any stereo rig's (a T written in millimetres reads as metres: every depth
    1000 x too far), else None."""
    if baseline_unknown(where):
        return (
            f"{where} has no measured baseline (saved as 1 m by 'calib rectify'): depths are in "
            "baselines, not metres; give 'calib rectify --baseline METRES' for metres"
        )
    b = calibration.baseline_m
    if 0 < b < SHORTEST_BASELINE_M:  # Middlebury's millimetres written as metres: "median depth 0.00 m"
        field = baseline_field(where)
        fix = (
            f"Middlebury's baseline is in millimetres: if it was written in metres, multiply it by 1000 "
            f"({b * 1e6:g})"
            if field == BASELINE_FIELDS["middlebury"]
            else f"check the unit of {field}"
        )
        return (
            f"{where}: the baseline reads {b * 1000:g} mm, shorter than a stereo rig's, so depths read "
            f"too near; {fix}"
        )
    if b <= LONGEST_BASELINE_M:
        return None
    field = baseline_field(where)
    if field == BASELINE_FIELDS["middlebury"]:  # millimetres already: a slip of another kind
        fix = f"Middlebury's baseline is in millimetres ({b * 1000:g} mm here): check its value"
    else:
        fix = (
            f"{field} must be in metres: if it was written in millimetres, divide it by 1000 "
            f"({b / 1000:g} m), in centimetres by 100 ({b / 100:g} m)"
        )
    return f"{where}: the baseline reads {b:g} m, longer than a stereo rig's, so depths read too far; {fix}"


def partner_file(path: str | Path, second: str | Path | None = None) -> Path | None:
    """The second file a calibration is read with: ``second`` when given, else the right camera's
    ROS camera_info found beside a left one (``_load`` reads it), else None."""
    if second:
        return Path(second)
    first = Path(path)
    return _right_partner(first) if first.is_file() and _file_kind(first)[0] == "ros" else None


def _right_partner(path: Path) -> Path | None:
    """The right camera's file beside a left one named alike (left.yaml -> right.yaml,
    cam_left_info.yaml -> cam_right_info.yaml), or None."""
    name = path.name
    for left, right in (("left", "right"), ("Left", "Right"), ("LEFT", "RIGHT")):
        if left in name:
            partner = path.with_name(name.replace(left, right))
            if partner.is_file():
                return partner
    return None


def _file_kind(path: Path) -> tuple[str, dict[str, Any] | None]:
    """How ``path`` is read: 'stereodemo', 'middlebury', 'kalibr', 'ros' or 'opencv' (YAML, XML or
    JSON as OpenCV writes them), with the JSON object or YAML mapping it holds (None: not parsed)."""
    with path.open("rb") as f:
        head = f.read(4096).decode("utf-8", "replace")
    suffix = path.suffix.lower()
    if suffix == ".json" or head.lstrip().startswith("{"):
        data = _json(path)
        return ("opencv", None) if {"M1", "K1"} & data.keys() else ("stereodemo", data)
    if "cam0=" in head or (suffix == ".txt" and not head.lstrip().startswith(_OPENCV_HEADS)):
        # a .txt holding OpenCV's YAML or XML (``calib chessboard --out rig.txt``) is read as such
        return "middlebury", None
    parsed = read_yaml(path)
    if parsed is not None and is_kalibr(parsed):
        return "kalibr", parsed
    return ("ros", parsed) if is_camera_info(parsed) else ("opencv", None)


MAX_LOOKED_AT = 50  # files of a folder given as a calibration looked at for the one meant


def _check_file(path: Path) -> None:
    """Refuse a path that is not a file: a folder (named as such, with the files in it that could
    be its calibration), or nothing at all."""
    if path.is_dir():
        # a Middlebury scene's calib.txt, or a rig this app (or OpenCV) wrote: not an image list
        found = [
            p
            for p in sorted(path.iterdir())[:MAX_LOOKED_AT]
            if p.name == "calib.txt" or (p.suffix.lower() in (".yaml", ".yml", ".xml") and is_rig_file(p))
        ]
        which = (
            f": {found[0]}"
            if found
            else " (OpenCV YAML/XML such as stereo.yaml, a Kalibr camchain, a ROS camera_info, Middlebury "
            "calib.txt or stereodemo JSON)"
        )
        raise UserError(f"{path} is a folder, not a calibration file; give the calibration file{which}")
    if not path.is_file():
        raise UserError(f"calibration file not found: {path}; check the path")


def _load(
    path: Path, second: Path | None, image_size: tuple[int, int] | None
) -> tuple[Calibration, StereoRig | None, tuple[int, int] | None]:
    """(geometry, raw rig or None, the image size the file is for or None); a placeholder
    baseline (``baseline_unknown``) comes back with ``baseline_known`` False."""
    for p in (path, second):
        if p is not None:
            _check_file(p)
    calibration, rig, size = _read_kind(path, second, image_size)
    if baseline_unknown(path):  # 'calib rectify' without --baseline: a 1 m placeholder
        calibration = replace(calibration, baseline_known=False)
    return calibration, rig, size


def _read_kind(
    path: Path, second: Path | None, image_size: tuple[int, int] | None
) -> tuple[Calibration, StereoRig | None, tuple[int, int] | None]:
    kind, data = _file_kind(path)
    if kind == "stereodemo":
        assert data is not None
        w, h = data.get("width"), data.get("height")
        size = (w, h) if isinstance(w, int) and isinstance(h, int) and w > 0 and h > 0 else None
        return read_stereodemo_json(path), None, size
    if kind == "middlebury":
        meta = read_middlebury_calib(path)
        size = (meta.width, meta.height) if meta.width and meta.height else None
        return meta.calibration, None, size
    if kind == "kalibr":
        assert data is not None
        chain = check_rig(read_kalibr(data, path), str(path))
        return _checked_rig(chain, path), chain, chain.image_size
    if kind == "ros":
        second = second or _right_partner(path)
        if second is None and camera_info(path)[0]["P"][0, 3] != 0:  # it read "give the right one" (review)
            raise UserError(
                f"{path} is the right camera's ROS camera_info (its P[0,3] is not 0): give the left "
                "camera's file as --calib and this one as --calib2"
            )
        if second is None:
            raise UserError(
                f"{path} is one camera's ROS camera_info; give the right camera's file as well (--calib2 "
                "FILE; found beside it when named as it is with 'right' for 'left')"
            )
        calibration, rig = read_ros_camera_info_pair(path, second)
        return calibration, rig, rig.image_size if rig is not None else None
    # the size the file says (None: it says none, and the rig was built for the frames)
    return _read_opencv(path, second, image_size)
