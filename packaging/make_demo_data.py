"""Regenerate resources/demo/motorcycle from scikit-image's copy of Middlebury 2014 Motorcycle.

scikit-image ships the pair down-sampled 4x (``downscale_local_mean``) with its ground
truth and calibration; this writes it in Middlebury's own layout. Run from the repo root:
``python packaging/make_demo_data.py`` (needs scikit-image, which the app does not).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from skimage import data

from app.engine.formats import write_color_png, write_pfm

OUT = Path(__file__).resolve().parents[1] / "resources" / "demo" / "motorcycle"

# Calibration for the 4x down-sampled images, from scikit-image's documentation of
# stereo_motorcycle; ndisp is Middlebury's 270 / 4 rounded up.
CALIB = """cam0=[994.978 0 311.193; 0 994.978 254.877; 0 0 1]
cam1=[994.978 0 342.279; 0 994.978 254.877; 0 0 1]
doffs=31.086
baseline=193.001
width=741
height=500
ndisp=68
"""


def main() -> None:
    left, right, disp = data.stereo_motorcycle()
    OUT.mkdir(parents=True, exist_ok=True)
    write_color_png(OUT / "im0.png", left)
    write_color_png(OUT / "im1.png", right)
    # Middlebury marks unknown ground truth with inf
    write_pfm(OUT / "disp0GT.pfm", np.where(np.isfinite(disp), disp, np.inf).astype(np.float32))
    (OUT / "calib.txt").write_text(CALIB)


if __name__ == "__main__":
    main()
