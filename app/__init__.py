"""Bi3D Studio: stereo depth with Bi3D, an SGBM baseline, optical flow and calibration checks."""

import os as _os

__version__ = "0.1.0"

# OpenMP's idle threads (GNU libgomp, which PyTorch's CPU wheels load) spin for 300 000 turns
# before they sleep. On a busy CPU that spinning takes the cores the other work needs: a binary
# frame at 480 x 640 on 2 cores took 160-240 ms with a second such process beside it, against
# 28 ms alone. 10 000 turns: 76 ms beside it, 29 ms alone (OMP_WAIT_POLICY=PASSIVE: 44 / 41 ms).
# Set before anything loads libgomp; a value the user set wins (GOMP_SPINCOUNT=300000: as before).
OPENMP_SPINCOUNT = "10000"
_os.environ.setdefault("GOMP_SPINCOUNT", OPENMP_SPINCOUNT)
