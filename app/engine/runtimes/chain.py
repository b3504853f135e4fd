"""The runtime in use, the ones to fall back on, and (``auto``) the choice of the fastest.

Runtimes are opened at the first frame, not when the engine is built: exporting ONNX or building
TensorRT engines takes seconds to minutes and must not block a GUI thread. A runtime that cannot
open is skipped with its reason; one that fails on a frame (GPU out of memory, a broken engine)
is dropped and the frame is computed again by the next. With ``probe``, every available runtime
is timed on the first frame of each size (features + 2 planes, the fastest of five runs after a
warm-up, the runtimes in turn) and the fastest runs. With a ``store`` (``cache.ChoiceStore``)
and a ``key`` naming the device, precision and model, the decision is kept on disk per frame
size and reused, so identical runs run the same runtime and give identical outputs; a reused
decision opens that runtime alone (the others open only if it fails). ``reason`` says which one
ran, whether the choice came from the cache, and why the others did not. A candidate is named by
its opener: ``auto`` precision on a CPU with native bf16 offers torch at bf16 and at fp32
("torch bf16", "torch fp32"), timed like two runtimes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from app.engine.errors import UserError
from app.engine.runtimes.base import FrameFeatures, Runtime, RuntimeFailed, RuntimeUnavailable
from app.engine.runtimes.cache import RETIME_ENV, ChoiceStore

Opener = tuple[str, Callable[[], Runtime]]
PROBE_PLANES = 2


class RuntimeChain:
    """Runtimes in preference order, opened lazily; implements the runtime interface by delegation."""

    def __init__(
        self,
        candidates: list[Opener],
        probe: bool = False,
        notes: list[str] | None = None,
        key: str | None = None,
        store: ChoiceStore | None = None,
    ) -> None:
        self.key, self.store = key, store
        self.from_cache: dict[tuple[int, int], bool] = {}
        self._pending = list(candidates)
        self._ready: list[Runtime] = []
        self._labels: dict[int, str] = {}  # a candidate's own name ("torch fp32"), by id of its runtime
        self.probe = probe
        self.notes: list[str] = list(notes or [])
        self.choices: dict[tuple[int, int], str] = {}
        self._size = (0, 0)

    @classmethod
    def of(cls, runtime: Runtime) -> RuntimeChain:
        chain = cls([])
        chain._ready.append(runtime)
        return chain

    # ---- which runtime runs ---------------------------------------------------------
    @property
    def current(self) -> Runtime:
        if not self._ready and not self._open_next():
            raise UserError("no runtime can run this model here: " + "; ".join(self.notes))
        return self._ready[0]

    def prepare(self, left: Tensor, right: Tensor) -> None:
        """Open runtimes (all of them when probing) and, once per frame size, pick the fastest."""
        self._size = (int(left.shape[-2]), int(left.shape[-1]))
        if self.probe and self._size not in self.choices and not self._open_cached():
            while self._open_next():
                pass
            if self._size not in self.choices and len(self._ready) > 1:
                self._choose(left, right)
        self.current  # noqa: B018 - opens the first runtime (or says why none can run)

    def _open_cached(self) -> bool:
        """Run the runtime the cache names for this frame size, opening it alone if needed (the
        others stay unopened until one is needed: opening ONNX Runtime imports onnx and loads its
        sessions, 1.6 s of a one-shot `depth` here when the cache named torch); False when
        there is no usable entry or that runtime cannot open, and everything is then opened and
        timed as without a cache."""
        key = self._size_key()
        entry = None if key is None else self._cached(key)
        if key is None or entry is None:
            return False
        if entry["runtime"] not in {self.label(r) for r in self._ready}:
            waiting = [i for i, (pending, _) in enumerate(self._pending) if pending == entry["runtime"]]
            if not waiting or not self._open(*self._pending.pop(waiting[0])):
                return False
        return self._reuse(key, entry)

    def fail(self, exc: RuntimeUnavailable) -> bool:
        """Drop the current runtime after a failure; whether another one can take the frame."""
        failed = self._ready.pop(0)
        has_next = bool(self._ready) or self._open_next()
        target = f"; fell back to {self.label(self._ready[0])}" if has_next else ""
        self.notes.append(f"{self.label(failed)} failed ({exc}){target}")
        return has_next

    def _open_next(self) -> bool:
        while self._pending:
            if self._open(*self._pending.pop(0)):
                return True
        return False

    def _open(self, name: str, opener: Callable[[], Runtime]) -> bool:
        """Open one runtime into the ready ones; False, with its reason noted, when it cannot."""
        try:
            runtime = opener()
            self._labels[id(runtime)] = name
            self._ready.append(runtime)
            return True
        except RuntimeUnavailable as exc:
            self.notes.append(f"{name} skipped: {exc}")
        except Exception as exc:  # an optional runtime's bug must not stop the frame
            self.notes.append(f"{name} skipped: it failed to open ({type(exc).__name__}: {exc})")
        return False

    def _size_key(self) -> str | None:
        """The cache key of this model at the current frame size (None: no cache)."""
        h, w = self._size
        return f"{self.key}|{h}x{w}" if self.key is not None and self.store is not None else None

    def _choose(self, left: Tensor, right: Tensor) -> None:
        h, w = self._size
        key = self._size_key()
        if key is not None and self._reuse(key, self._cached(key)):
            return
        timed: list[tuple[float, Runtime]] = []
        for runtime, ms in zip(list(self._ready), _probe_all(self._ready, left, right), strict=True):
            if isinstance(ms, RuntimeFailed):
                self._ready.remove(runtime)
                self.notes.append(f"{self.label(runtime)} failed while timed ({ms})")
            else:
                timed.append((ms, runtime))
        timed.sort(key=lambda pair: pair[0])
        self._ready = [runtime for _, runtime in timed]
        figures = ", ".join(f"{self.label(r)} {ms:.0f} ms" for ms, r in timed)
        self.choices[self._size] = (
            f"auto picked the fastest here (features + {PROBE_PLANES} planes at {w} x {h} px, the frame "
            f"padded for the network: {figures})"
        )
        self.from_cache[self._size] = False
        if key is not None and self.store is not None and timed:
            self.store.put(key, self.label(timed[0][1]), {self.label(r): ms for ms, r in timed})
            self.notes.extend(n for n in self.store.notes if n not in self.notes)

    def _cached(self, key: str) -> dict[str, Any] | None:
        """The cache's entry for ``key`` (None: none usable), its notes (a damaged file) noted."""
        assert self.store is not None
        entry = self.store.get(key)
        self.notes.extend(n for n in self.store.notes if n not in self.notes)
        return entry

    def _reuse(self, key: str, entry: dict[str, Any] | None) -> bool:
        """Run the runtime that ``entry``, the cache's for ``key``, names, if it is open here."""
        names = [self.label(r) for r in self._ready]
        if entry is None or entry["runtime"] not in names:
            return False
        first = names.index(entry["runtime"])
        self._ready.insert(0, self._ready.pop(first))
        timings = entry.get("timings_ms")
        if not isinstance(timings, dict):
            timings = {}
        figures = ", ".join(f"{n} {float(ms):.0f} ms" for n, ms in timings.items())
        h, w = self._size
        self.choices[self._size] = (
            f"auto: {entry['runtime']}, from the cache (timed earlier at {w} x {h} px, the padded frame: "
            f"{figures}; {RETIME_ENV}=1 times them again)"
        )
        self.from_cache[self._size] = True
        return True

    @property
    def choice_source(self) -> str:
        """How ``auto`` chose the runtime of the last frame: "cache", "timed", or "" (not auto)."""
        if self._size not in self.from_cache:
            return ""
        return "cache" if self.from_cache[self._size] else "timed"

    def label(self, runtime: Runtime) -> str:
        """The candidate's own name: the runtime's, or with its precision ("torch fp32") where
        ``auto`` precision times one runtime at two precisions."""
        return self._labels.get(id(runtime), runtime.name)

    # ---- the runtime interface, delegated ---------------------------------------------
    @property
    def name(self) -> str:
        return self.current.name

    @property
    def device(self) -> str:
        return self.current.device

    @property
    def precision(self) -> str:
        return self.current.precision

    @property
    def max_planes(self) -> int | None:
        return getattr(self.current, "max_planes", None)

    @property
    def reason(self) -> str:
        parts = [self.choices[self._size]] if self._size in self.choices else []
        own = getattr(self.current, "reason", "")
        return "; ".join([*parts, *([own] if own else []), *self.notes])

    def features(self, left: Tensor, right: Tensor) -> FrameFeatures:
        return self.current.features(left, right)

    def planes(self, feats: FrameFeatures, shifts: Tensor) -> Tensor:
        return self.current.planes(feats, shifts)

    def refine_planes(self, feats: FrameFeatures, lowres: Tensor) -> Tensor:
        return self.current.refine_planes(feats, lowres)

    def regularise(self, feats: FrameFeatures, lowres: Tensor) -> Tensor:
        return self.current.regularise(feats, lowres)

    def refine_disparity(self, feats: FrameFeatures, normalized: Tensor) -> Tensor:
        return self.current.refine_disparity(feats, normalized)

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return self.current.context()

    def describe(self) -> str:
        return self.current.describe()


def _probe_all(
    runtimes: list[Runtime], left: Tensor, right: Tensor, rounds: int = 5
) -> list[float | RuntimeFailed]:
    """Each runtime's milliseconds for features + PROBE_PLANES planes (or how it failed): a
    warm-up each, then ``rounds`` rounds that run every runtime once in turn, and each one's
    fastest run. Timed in turn, a busy spell slows every candidate alike; timed one after the
    other, it fell on one of them (a decision timed beside two other jobs picked ONNX Runtime at
    59 ms over torch at 79, where torch is the faster on the quiet machine), and the decision
    is cached."""
    shifts = torch.arange(PROBE_PLANES, dtype=torch.float32)
    best: list[float | RuntimeFailed] = [float("inf")] * len(runtimes)
    for round_ in range(rounds + 1):
        for i, runtime in enumerate(runtimes):
            if isinstance(best[i], RuntimeFailed):
                continue
            try:
                with runtime.context():
                    t0 = time.perf_counter()
                    runtime.planes(runtime.features(left, right), shifts)
                    if left.is_cuda:
                        torch.cuda.synchronize(left.device)
                    ms = (time.perf_counter() - t0) * 1000
            except RuntimeFailed as exc:
                best[i] = exc
                continue
            so_far = best[i]
            if round_ and isinstance(so_far, float):  # the first round warms up
                best[i] = min(so_far, ms)
    return best
