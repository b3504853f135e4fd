"""Building a model of any kind from its description."""

from __future__ import annotations

from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.model import Bi3DModel, ModelKind, SweepModel


def build_model(kind: ModelKind | str, width: float = 1.0, max_disparity: int = 192) -> SweepModel:
    """A network of ``kind`` with random weights; ``width`` scales its channels (1.0: published)."""
    if ModelKind(kind) is ModelKind.LIGHT:
        return LightBi3D(width, max_disparity)
    return Bi3DModel(kind, width, max_disparity)
