"""Bi3D Studio: stereo depth with Bi3D, an SGBM baseline, optical flow and calibration checks."""

__version__ = "0.1.0"
