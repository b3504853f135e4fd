"""Calibration files.

Middlebury's ``calib.txt`` (``cam0=[f 0 cx; 0 f cy; 0 0 1]``, ``doffs``, ``baseline`` in mm,
``ndisp``) is read here; other formats and rectification come with the inputs work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from app.engine.errors import UserError
from app.engine.types import Calibration

_MATRIX = re.compile(r"\[([^\]]*)\]")


@dataclass(frozen=True)
class MiddleburyCalib:
    calibration: Calibration
    width: int | None
    height: int | None
    ndisp: int | None


def read_middlebury_calib(path: str | Path) -> MiddleburyCalib:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"cannot read calibration {path}: {exc.strerror}; check the path") from exc
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            fields[key.strip()] = value.strip()
    try:
        cam0 = [float(v) for v in _MATRIX.search(fields["cam0"]).group(1).replace(";", " ").split()]  # type: ignore[union-attr]
        calibration = Calibration(
            focal_px=cam0[0],
            baseline_m=float(fields["baseline"]) / 1000.0,
            cx=cam0[2],
            cy=cam0[5],
            doffs=float(fields.get("doffs", 0.0)),
        )
    except (KeyError, AttributeError, IndexError, ValueError) as exc:
        raise UserError(
            f"{path} is not a Middlebury calib.txt (needs cam0=[f 0 cx; 0 f cy; 0 0 1] and baseline=mm)"
        ) from exc

    def opt_int(key: str) -> int | None:
        try:
            return round(float(fields[key]))
        except (KeyError, ValueError):
            return None

    return MiddleburyCalib(calibration, opt_int("width"), opt_int("height"), opt_int("ndisp"))
