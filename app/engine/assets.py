"""Files shipped with the application (demo data, default weights).

Installed from a wheel they live in the ``app.resources`` package; in a source
checkout they are the repository's ``resources/`` folder.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

DEFAULT_WEIGHTS = ("models", "bi3d_default.pt")
DEMO_SCENE = ("demo", "motorcycle")


def resource_root() -> Path:
    try:
        root = Path(str(importlib.resources.files("app.resources")))
        if root.is_dir():
            return root
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "resources"


def resource_path(*parts: str) -> Path:
    return resource_root().joinpath(*parts)


def default_weights() -> Path | None:
    """The bundled default Bi3D model, or None when this build ships none."""
    path = resource_path(*DEFAULT_WEIGHTS)
    return path if path.is_file() else None


def demo_scene() -> Path:
    return resource_path(*DEMO_SCENE)
