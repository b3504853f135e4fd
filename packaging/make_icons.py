"""Render resources/icons/bi3d-studio.svg to the PNG sizes desktops and installers ask for.

Run from the repository root after editing the SVG: ``python packaging/make_icons.py``.
Uses Qt's SVG renderer offscreen, so no display is needed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"
SOURCE = ICONS / "bi3d-studio.svg"
SIZES = (48, 128, 256)


def png_path(size: int) -> Path:
    return ICONS / f"bi3d-studio-{size}.png"


def render(size: int) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(SOURCE))
    if not renderer.isValid():
        raise SystemExit(f"{SOURCE}: not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    if not image.save(str(png_path(size))):
        raise SystemExit(f"could not write {png_path(size)}")
    print(f"wrote {png_path(size)}")


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    for size in SIZES:
        render(size)
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
