"""One place for the checks every incoming number passes: finite, in range, of the right kind.

Numbers reach the engine from the command line, the window, the settings file, calibration
files, checkpoint metadata and recording metadata. Each goes through ``number`` or ``integer``,
whose ``UserError`` names the value, its unit and the allowed range, so that a NaN, an
infinity or a size of a million never travels further and fails somewhere far away.
Standard library only: every layer of the engine may use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.engine.errors import UserError


@dataclass(frozen=True)
class Bounds:
    """An allowed interval; either end may be open (excluded) or absent (unbounded)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def contains(self, value: float) -> bool:
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return not (self.high is not None and (value > self.high or (self.high_open and value == self.high)))

    def describe(self, unit: str = "") -> str:
        suffix = f" {unit}" if unit else ""
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"{left}{shown(self.low)}, {shown(self.high)}{right}{suffix}"
        if self.low is not None:
            return f"{'above' if self.low_open else 'at least'} {shown(self.low)}{suffix}"
        if self.high is not None:
            return f"{'below' if self.high_open else 'at most'} {shown(self.high)}{suffix}"
        return "a finite number"


def shown(x: float) -> str:
    """A number as a person reads it: whole numbers in full (4096, 9223372036854775807), others short."""
    if isinstance(x, int) or (math.isfinite(x) and x == int(x) and abs(x) < 1e15):
        return str(int(x))
    return f"{x:g}"


def tenth(x: float) -> str:
    """A figure to a tenth, without trailing zeros: 23.3, 48 ("23.3064, 26.1818" and "46.6667" of
    planes between whole pixels read raw: review)."""
    return f"{float(x):.1f}".rstrip("0").rstrip(".")


POSITIVE = Bounds(0.0, None, low_open=True)
NON_NEGATIVE = Bounds(0.0)


def number(value: object, name: str, bounds: Bounds = Bounds(), unit: str = "", hint: str = "") -> float:
    """``value`` as a finite float inside ``bounds``; else a ``UserError`` with unit and range.

    ``name`` says what the number is ("--budget-ms", "focal length in calib.txt"); ``hint``
    (optional) says what to do instead.
    """
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise UserError(f"{name} is not a number ({value!r}); {_must(bounds, unit, hint)}") from None
    if not math.isfinite(x):
        # "it must be a finite number" would repeat what was just said: only bounds add to it
        bounded = bounds.low is not None or bounds.high is not None
        must = _must(bounds, unit, hint) if bounded else hint
        raise UserError(f"{name} is {x}, not a finite number" + (f"; {must}" if must else ""))
    if not bounds.contains(x):
        raise _outside(name, x, bounds, unit, hint)
    return x


def integer(value: object, name: str, bounds: Bounds = Bounds(), unit: str = "", hint: str = "") -> int:
    """``value`` as an int inside ``bounds`` (a float must be whole: 4.0 passes, 4.5 does not)."""
    if isinstance(value, bool):
        raise UserError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            return integer(int(text, 10), name, bounds, unit, hint)
        except ValueError:
            pass  # "4.0", "nan", "abc": judged as a number below
    x = number(value, name, Bounds(), unit, hint)
    if x != int(x):
        raise UserError(f"{name} must be a whole number, got {x:g}")
    whole = int(x)
    if not bounds.contains(whole):
        raise _outside(name, whole, bounds, unit, hint)
    return whole


def _must(bounds: Bounds, unit: str, hint: str) -> str:
    text = f"it must be {bounds.describe(unit)}"
    return f"{text}; {hint}" if hint else text


def _outside(name: str, x: float, bounds: Bounds, unit: str, hint: str) -> UserError:
    value = f"{shown(x)}{' ' + unit if unit else ''}"
    if bounds.low is not None and bounds.high is not None:
        text = f"{name} {value} is outside {bounds.describe(unit)}"
        return UserError(f"{text}; {hint}" if hint else text)
    text = f"{name} must be {bounds.describe(unit)}, got {value}"
    return UserError(f"{text}; {hint}" if hint else text)


__all__ = ["NON_NEGATIVE", "POSITIVE", "Bounds", "integer", "number"]
