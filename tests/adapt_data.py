"""Test data shared by the adapt tests (engine, CLI and window)."""

from __future__ import annotations

from app.engine.synthetic.footage import FootageConfig

# ten frames of synthetic rig footage, small enough for adapt tests to run in seconds
TINY_FOOTAGE = FootageConfig(height=96, width=160, frames=10, shots=1, max_disparity=24, pan_px=20)
