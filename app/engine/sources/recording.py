"""Recording a stereo session to a folder that plays back as a source.

Layout::

    DIR/session.json            format marker, source description, calibration (or null)
    DIR/timestamps.txt          one "INDEX TIMESTAMP" line per completed frame
    DIR/left/000000.png         lossless RGB
    DIR/right/000000.png
    DIR/disparity/000000.pfm    ground truth, when the source has it (synthetic, datasets)

Crash safety: every file is written under a temporary name and renamed into place, and a
frame's timestamp line is appended (in one write) only after its files are in place. The
timestamps file is the commit log: playback lists exactly the frames whose line is complete,
so a crash at any moment leaves every earlier frame readable. Rewriting the whole log per
frame would cost O(frames) each time; an append plus "ignore an unfinished last line" is as
safe and stays cheap for long recordings.

Timestamps only grow: a source that starts again (a video looped or sought back) continues the
recording's clock from its last frame, one frame interval on, instead of repeating its times.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from app.engine.errors import UserError
from app.engine.fileio import make_folder
from app.engine.formats import atomic_write, write_color_png, write_pfm
from app.engine.sources.base import StereoSource, plural
from app.engine.sources.files import Scene, SceneSource
from app.engine.sources.recording_index import (
    FORMAT,
    LOCK,
    SESSION,
    TIMESTAMPS,
    acquire_writer,
    looks_like_recording,
    missing_index_error,
    parse_timestamps,
    read_session,
    reindex_hint,
    remove_leftovers,
)
from app.engine.types import Calibration, StereoPair
from app.engine.validation import POSITIVE, number

DEFAULT_INTERVAL_S = 0.1  # the step of a restarted clock before two frames have shown the real one


class Recorder:
    """Writes pairs as a recording; safe to call ``write`` from a worker thread."""

    def __init__(
        self,
        folder: str | Path,
        calibration: Calibration | None = None,
        *,
        overwrite: bool = False,
        source: str = "",
    ) -> None:
        self.folder = Path(folder)
        self._lock = threading.Lock()
        self._closed = False
        self._made_folder = not self.folder.exists()  # ``discard`` removes only a folder it made
        # a recording's writer lock before anything is deleted: a live recorder's files stay
        existing = is_recording(self.folder) or looks_like_recording(self.folder)
        self._lock_fd = acquire_writer(self.folder) if existing else None
        try:
            _prepare(self.folder, overwrite)
            if self._lock_fd is None:
                self._lock_fd = acquire_writer(self.folder)  # leftovers are cleaned only without it
            for sub in ("left", "right"):
                (self.folder / sub).mkdir()
            self.frames_written = 0
            self._last_stamp: float | None = None
            self._clock_offset = 0.0
            self._interval = DEFAULT_INTERVAL_S
            self._calibration = calibration  # else the first frame's, written when it arrives
            self._meta: dict[str, Any] = {"format": FORMAT, "version": 1, "source": source}
            self._meta["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            atomic_write(self.folder / TIMESTAMPS, b"")
            self._write_session()
        except BaseException:
            self.close()
            raise

    def write(self, pair: StereoPair) -> int:
        """Write one pair (and its ground truth); returns its index once it is committed."""
        with self._lock:
            if self._closed:
                raise UserError(f"the recording in {self.folder} is closed; start a new one")
            index = self.frames_written
            name = f"{index:06d}"
            write_color_png(self.folder / "left" / f"{name}.png", pair.left)
            write_color_png(self.folder / "right" / f"{name}.png", pair.right)
            if pair.gt_disparity is not None:
                (self.folder / "disparity").mkdir(exist_ok=True)
                write_pfm(self.folder / "disparity" / f"{name}.pfm", pair.gt_disparity)
            if self._calibration is None and pair.calibration is not None:
                self._calibration = pair.calibration
                self._write_session()
            self._commit(f"{name} {self._stamp(float(pair.timestamp))!r}\n")
            self.frames_written += 1
            return index

    def _stamp(self, timestamp: float) -> float:
        """``timestamp`` on the recording's own clock, which only grows (module docstring)."""
        stamp = timestamp + self._clock_offset
        if self._last_stamp is not None and stamp <= self._last_stamp:
            self._clock_offset += self._last_stamp + self._interval - stamp
            stamp = timestamp + self._clock_offset
        if self._last_stamp is not None:
            self._interval = stamp - self._last_stamp
        self._last_stamp = stamp
        return stamp

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._lock_fd is not None:
                # the lock file stays (empty, hidden): unlinking it would let a process waiting
                # on the old file and a new recorder on a new one both think they hold it
                os.close(self._lock_fd)
                self._lock_fd = None

    def discard(self) -> None:
        """Close, and remove what was set up when no frame was written (a source that failed on its
        first frame): an empty recording would block the folder ("already holds a recording") and
        play back as no frames. The folder goes too when this recorder made it. Frames once
        written are never removed here."""
        self.close()
        if self.frames_written:
            return
        (self.folder / TIMESTAMPS).unlink(missing_ok=True)
        (self.folder / SESSION).unlink(missing_ok=True)
        for sub in ("left", "right", "disparity"):
            shutil.rmtree(self.folder / sub, ignore_errors=True)
        if self._made_folder:
            (self.folder / LOCK).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.folder.rmdir()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _commit(self, line: str) -> None:
        # one write(2) on an O_APPEND descriptor: the line lands whole or, at worst, unfinished
        fd = os.open(self.folder / TIMESTAMPS, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, line.encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def _write_session(self) -> None:
        cal = dataclasses.asdict(self._calibration) if self._calibration else None
        text = json.dumps({**self._meta, "calibration": cal}, indent=2) + "\n"
        atomic_write(self.folder / SESSION, text.encode())


def _prepare(folder: Path, overwrite: bool) -> None:
    """Refuse to overwrite a recording (unless told to) or to mix into a folder of other files."""
    if is_recording(folder):
        if not overwrite:
            raise UserError(f"{folder} already holds a recording; choose a new folder or pass --overwrite")
        (folder / TIMESTAMPS).unlink(missing_ok=True)  # first the log: no frame is listed any more
        for sub in ("left", "right", "disparity"):
            shutil.rmtree(folder / sub, ignore_errors=True)
        (folder / SESSION).unlink()
    elif looks_like_recording(folder):
        raise UserError(f"{folder} holds a recording with a damaged index; {reindex_hint(folder)}")
    elif folder.exists() and (not folder.is_dir() or any(p.name != LOCK for p in folder.iterdir())):
        raise UserError(f"{folder} exists and is not an empty folder; record into a new or empty folder")
    make_folder(folder, "recording folder")


def is_recording(folder: Path) -> bool:
    return folder.is_dir() and read_session(folder)[0] is not None


def read_timestamps(folder: Path) -> list[tuple[int, float]]:
    """(index, timestamp) of every committed frame; an unfinished last line is ignored."""
    path = folder / TIMESTAMPS
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise missing_index_error(folder, f"{path} is missing") from None
    except OSError as exc:
        raise UserError(f"cannot read {path} ({exc.strerror}); check its permissions") from None
    return parse_timestamps(raw, path)


def open_recording(folder: Path) -> SceneSource:
    """A recording as a source: its committed frames with their timestamps and calibration."""
    meta, problem = read_session(folder)
    if meta is None:
        raise missing_index_error(folder, problem or f"{folder / SESSION} is missing")
    remove_leftovers(folder)  # temporary files of a recorder that was killed while writing
    frames = read_timestamps(folder)
    scenes = []
    for index, _ in frames:
        name = f"{index:06d}"
        gt = folder / "disparity" / f"{name}.pfm"
        scenes.append(
            Scene(
                name,
                folder / "left" / f"{name}.png",
                folder / "right" / f"{name}.png",
                gt if gt.is_file() else None,
            )
        )
    calibration = _calibration(meta, folder)
    description = f"recording {folder.name} ({plural(len(scenes), 'frame')})"
    return SceneSource(scenes, description, [stamp for _, stamp in frames], calibration)


def _calibration(meta: dict[str, Any], folder: Path) -> Calibration | None:
    cal = meta.get("calibration")
    if not cal:
        return None
    where = f"{folder / SESSION}"
    try:
        values = {key: number(value, f"calibration {key} in {where}") for key, value in cal.items()}
        calibration = Calibration(**values)
    except (TypeError, AttributeError):
        raise UserError(f"{where} has a damaged calibration; fix or remove it") from None
    number(calibration.focal_px, f"calibration focal_px in {where}", POSITIVE, "px")
    number(abs(calibration.baseline_m), f"calibration baseline_m in {where}", POSITIVE, "m")
    return calibration


def record(
    source: StereoSource, recorder: Recorder, frames: int | None = None, seconds: float | None = None
) -> int:
    """Copy pairs until the source ends, ``frames`` are written or ``seconds`` of source time pass.

    Time is the sources's own: wall-clock time for cameras, media time for files.
    """
    start: float | None = None
    while frames is None or recorder.frames_written < frames:
        pair = source.read()
        if pair is None:
            break
        start = pair.timestamp if start is None else start
        if seconds is not None and pair.timestamp - start >= seconds:
            break
        recorder.write(pair)
    return recorder.frames_written
