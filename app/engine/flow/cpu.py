"""Optical flow on the CPU: OpenCV's DIS and Farneback behind ``app.engine.flow.base``'s interface."""

from __future__ import annotations

import time
from typing import ClassVar

import cv2
import numpy as np

from app.engine.flow.base import FlowResult, check_sizes, elapsed_ms, to_gray


class _CpuFlow:
    name = ""
    device = "cpu"
    preset: str | None = None
    status = ""

    def compute(self, frame0: np.ndarray, frame1: np.ndarray) -> FlowResult:
        t0 = time.perf_counter()
        g0, g1 = to_gray(frame0), to_gray(frame1)
        check_sizes(g0.shape[::-1], g1.shape[::-1])
        t1 = time.perf_counter()
        flow = np.asarray(self._calc(g0, g1), dtype=np.float32)
        t2 = time.perf_counter()
        timings = {"gray": elapsed_ms(t0, t1), "calc": elapsed_ms(t1, t2), "total": elapsed_ms(t0, t2)}
        return FlowResult(flow, self.name, self.device, timings)

    def _calc(self, gray0: np.ndarray, gray1: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def close(self) -> None:
        """Nothing to release on the CPU."""


class DisFlow(_CpuFlow):
    """OpenCV's Dense Inverse Search (Kroeger et al. 2016) at a speed/quality preset."""

    name = "dis"
    _PRESET_IDS: ClassVar[dict[str, int]] = {
        "ultrafast": cv2.DISOpticalFlow_PRESET_ULTRAFAST,
        "fast": cv2.DISOpticalFlow_PRESET_FAST,
        "medium": cv2.DISOpticalFlow_PRESET_MEDIUM,
    }

    def __init__(self, preset: str = "fast") -> None:
        self.preset = preset
        self._dis = cv2.DISOpticalFlow.create(self._PRESET_IDS[preset])

    def _calc(self, gray0: np.ndarray, gray1: np.ndarray) -> np.ndarray:
        # None, not a zero buffer: DIS takes any flow of the right size as its initial guess
        return self._dis.calc(gray0, gray1, None)  # type: ignore[call-overload]


class FarnebackFlow(_CpuFlow):
    """Farneback polynomial expansion: slower than DIS, smooth, no preset."""

    name = "farneback"

    def __init__(self, levels: int = 4, winsize: int = 15, iterations: int = 3) -> None:
        self.levels, self.winsize, self.iterations = levels, winsize, iterations

    def _calc(self, gray0: np.ndarray, gray1: np.ndarray) -> np.ndarray:
        # pyr_scale 0.5 (classic pyramid), poly_n 5 with poly_sigma 1.1 as OpenCV's docs pair them
        flow = np.zeros((*gray0.shape, 2), np.float32)  # not read: flags has no USE_INITIAL_FLOW
        return cv2.calcOpticalFlowFarneback(
            gray0, gray1, flow, 0.5, self.levels, self.winsize, self.iterations, 5, 1.1, 0
        )
