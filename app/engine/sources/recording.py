"""Recording a stereo session to a folder that plays back as a source.

Layout::

    DIR/session.json            format marker, source description, calibration (or null)
    DIR/timestamps.txt          one "INDEX TIMESTAMP" line per completed frame
    DIR/left/000000.png         lossless RGB
    DIR/right/000000.png
    DIR/disparity/000000.pfm    ground truth, when the source has it (synthetic, datasets)
    DIR/rig.yml                 a raw rig's calibration (OpenCV YAML), when the frames are raw:
                                playback rectifies them with it

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

import collections
import contextlib
import dataclasses
import itertools
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from app.engine.errors import DiskFailure, UserError
from app.engine.fileio import make_folder
from app.engine.formats import atomic_write, write_color_png, write_pfm
from app.engine.sources.base import StereoSource, plural
from app.engine.sources.files import Scene, SceneSource
from app.engine.sources.layout import noise_note
from app.engine.sources.recording_index import (
    FORMAT,
    FRAME_NUMBER_TIMES,
    LOCK,
    RIG,
    SESSION,
    TIMESTAMPS,
    acquire_writer,
    drop_set_aside,
    frames_on_disk,
    looks_like_recording,
    missing_index_error,
    parse_timestamps,
    read_session,
    reindex_hint,
    release_lock,
    remove_leftovers,
    restore_set_aside,
    set_aside,
    writer_lock,
)
from app.engine.types import Calibration, StereoPair
from app.engine.validation import POSITIVE, number

if TYPE_CHECKING:
    import numpy as np

    from app.engine.calibration.rig import StereoRig

DEFAULT_INTERVAL_S = 0.1  # the step of a restarted clock before two frames have shown the real one
QUEUE_BYTES = (
    512 << 20
)  # a live recording's frames waiting to be written (about 3 s of 2 x 1280 x 720 at 30 fps)


class WriteFailed(DiskFailure):
    """A recording's files could not be written (a full disk, a drive gone): a failure while
    recording, not bad input; the frames committed before it stay."""


@contextlib.contextmanager
def write_failures(folder: Path) -> Iterator[None]:
    """Raise a failure to write into the recording ``folder`` as ``WriteFailed``."""
    try:
        yield
    except WriteFailed:
        raise
    except UserError as exc:  # atomic_write's: the disk is full, a file grew past a size limit
        raise WriteFailed(*exc.args) from exc
    except OSError as exc:  # the index's append and the folders: raw OS errors
        where = exc.filename or folder
        raise WriteFailed(
            f"cannot write {where} ({exc.strerror or exc}); free space or check the disk"
        ) from exc


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block has run (in the main thread; others get no signals),
    then act as they would have: a frame's index line and its count are one step."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[signal.Signals] = []
    kinds = (signal.SIGINT, signal.SIGTERM)
    previous = {
        kind: signal.signal(kind, lambda signum, _frame: held.append(signal.Signals(signum)))
        for kind in kinds
    }
    try:
        yield
    finally:
        for kind, handler in previous.items():
            signal.signal(kind, handler)
        if held:
            handler = previous[held[0]]
            if callable(handler):
                handler(held[0], None)  # raises KeyboardInterrupt or Terminated
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), held[0])


_UNSEEN = object()  # no frame written yet
_GIVEN = object()  # the recording's calibration was given: the frames' own are not compared


class Recorder:
    """Writes pairs as a recording; safe to call ``write`` from a worker thread."""

    def __init__(
        self,
        folder: str | Path,
        calibration: Calibration | None = None,
        *,
        overwrite: bool = False,
        source: str = "",
        rig: StereoRig | None = None,
    ) -> None:
        """``calibration``: the frames' rectified geometry (else the first frame's own). ``rig``:
        the raw rig the frames come from, unrectified (a rig loaded in the window, ``record
        --calib``): kept as ``rig.yml`` beside them, and playback rectifies with it, so the raw
        frames are kept and still play as a rectified pair in metres anywhere."""
        self.folder = Path(folder)
        self._rig = rig
        self._rig_fitted = rig is None  # the rig meets the first frame's size before it is kept
        self.rig_note: str | None = None  # how the rig was fitted to the frames (rescaled), if it was
        self._lock = threading.Lock()
        self._closed = False
        self.restored = False  # ``discard`` put back the recording --overwrite was replacing
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bi3d-record-png")
        self._made_folder = not self.folder.exists()  # ``discard`` removes only a folder it made
        # a recording's writer lock before anything is deleted: a live recorder's files stay
        existing = is_recording(self.folder) or looks_like_recording(self.folder)
        self._lock_fd = acquire_writer(self.folder) if existing else None
        try:
            _prepare(self.folder, overwrite)
            if self._lock_fd is None:
                self._lock_fd = acquire_writer(self.folder)  # leftovers are cleaned only without it
            self.frames_written = 0
            self.bytes_written = 0  # what the folder holds, for a badge that must not walk it each second
            self._session_bytes = 0
            self._last_stamp: float | None = None
            self._clock_offset = 0.0
            self._interval = DEFAULT_INTERVAL_S
            self._calibration = calibration  # else the first frame's, written when it arrives
            # frames whose own calibration is not the first frame's (a dataset's scenes each with
            # their own calib.txt, or none): the recording keeps one for all, which is said
            self.other_calibrations = 0
            self._first_own: object = _UNSEEN if calibration is None else _GIVEN
            self._meta: dict[str, Any] = {"format": FORMAT, "version": 1, "source": source}
            self._meta["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            with write_failures(self.folder):
                for sub in ("left", "right"):
                    (self.folder / sub).mkdir()
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
            if self._rig is not None:  # every frame: a camera may change its size midway
                self._check_rig(pair)
            with write_failures(self.folder):
                self._write_frame(f"{index:06d}", pair)
            if self.frames_written == 1:  # the recording --overwrite replaces is no longer needed
                drop_set_aside(self.folder)
            return index

    def _write_frame(self, name: str, pair: StereoPair) -> None:
        """The frame's files, then its index line; the caller holds the lock. A frame that could
        not be written whole leaves none of its files (a full disk left a left PNG the index did
        not list, and the next open advised repairing the recording: review)."""
        files = [self.folder / "left" / f"{name}.png", self.folder / "right" / f"{name}.png"]
        before = self.frames_written  # the count grows only once the frame is committed
        self._line_written = False
        try:
            if self._rig is not None and before == 0:  # in place before a raw frame is committed
                self._write_rig()
            # the two PNGs encode at once (OpenCV lets go of the GIL): half the time a pair on 2+ cores
            right = self._pool.submit(write_color_png, files[1], pair.right)
            try:
                write_color_png(files[0], pair.left)
            finally:
                right.result()  # its error (a full disk) is raised here, after the left one's
            if pair.gt_disparity is not None:
                (self.folder / "disparity").mkdir(exist_ok=True)
                files.append(self.folder / "disparity" / f"{name}.pfm")
                write_pfm(files[-1], pair.gt_disparity)
            if self._calibration is None and pair.calibration is not None:
                self._calibration = pair.calibration
                self._write_session()
            if self._first_own is _UNSEEN:
                self._first_own = pair.calibration
            elif self._first_own is not _GIVEN and pair.calibration != self._first_own:
                self.other_calibrations += 1
            line = f"{name} {self._stamp(float(pair.timestamp))!r}\n"
            size = len(line) + sum(path.stat().st_size for path in files)
            with signals_held():  # a Ctrl-C between the index line and the count lost count of a frame
                self._commit(line)
                self.frames_written += 1
                self.bytes_written += size
        except BaseException:
            # a signal held over the commit is raised after it, and an index line written whose
            # sync failed lists the frame: either way the files are the recording's
            if self.frames_written == before and not self._line_written:
                for path in files:
                    with contextlib.suppress(OSError):
                        path.unlink(missing_ok=True)
            raise

    def _check_rig(self, pair: StereoPair) -> None:
        """Frames of another size than the rig's would play back refused by its rectification. A
        rig made for another size of the same aspect ratio is rescaled to the first frame's, as
        ``depth --calib`` does (``record --calib`` refused the rig ``depth`` used: review)."""
        assert self._rig is not None
        if not self._rig_fitted:
            from app.engine.calibration.validate import fit_to_frames

            frame = (pair.left.shape[1], pair.left.shape[0])
            given = self._calibration if self._calibration is not None else self._rig.rectified()
            calibration, rig, self.rig_note = fit_to_frames(
                given, self._rig, self._rig.image_size, frame, "the calibration"
            )
            assert rig is not None
            self._rig, self._rig_fitted = rig, True
            if self._calibration is not None:
                self._calibration = calibration
                self._write_session()
        w, h = self._rig.image_size
        if pair.left.shape[:2] != (h, w):
            raise UserError(
                f"the calibration is for {w}x{h} frames but the source's are "
                f"{pair.left.shape[1]}x{pair.left.shape[0]}; record at the calibrated size or recalibrate"
            )

    def _write_rig(self) -> None:
        from app.engine.calibration.files import write_opencv_yaml

        assert self._rig is not None
        known = self._calibration is None or self._calibration.baseline_known
        write_opencv_yaml(self.folder / RIG, self._rig, baseline_known=known)
        self._meta["rig"] = RIG
        self._meta["frames"] = f"raw: rectified with {RIG} as they are played"
        self._write_session()

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

    def keep_times_of(self, source: object) -> None:
        """What the recorded source's timestamps are: from its first frame's time since 1970
        (``set_time_origin``), or frame numbers (a folder of pairs without times in its names:
        session.json said nothing, and its 0, 1, 2 read as seconds: review)."""
        if getattr(source, "frame_number_times", False):
            with self._lock:
                self._meta["timestamps_from"] = FRAME_NUMBER_TIMES
                self._write_session()
        self.set_time_origin(getattr(source, "time_origin_ns", None))

    def set_time_origin(self, origin_ns: int | None) -> None:
        """The source's first frame's time in ns since 1970 (``SceneSource.time_origin_ns``): kept
        in session.json as ``start_time_ns``, the timestamps counting from it."""
        if origin_ns is None:
            return
        with self._lock:
            self._meta["start_time_ns"] = int(origin_ns)
            self._meta["timestamps_from"] = "start_time_ns (nanoseconds since 1970, UTC)"
            self._write_session()

    def set_source(self, source: str, notes: list[str] | tuple[str, ...] = ()) -> None:
        """What was recorded, as the source describes itself now: a video's layout is decided on
        its first frame (session.json had named a top-bottom video "side by side": review); and
        the source's ``notes`` that say its depth is noise (a mono video), which the recording
        says again when it plays (its replay looked like stereo: review)."""
        kept = [n for n in notes if noise_note(n)]
        with self._lock:
            if self._closed or not self.frames_written:
                return
            if self._meta.get("source") == source and self._meta.get("source_notes", []) == kept:
                return
            self._meta["source"] = source
            if kept:
                self._meta["source_notes"] = kept
            self._write_session()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._pool.shutdown(wait=True)
            if self._lock_fd is not None:
                release_lock(self.folder, self._lock_fd)
                self._lock_fd = None

    def discard(self) -> None:
        """Close, and remove what was set up when no frame was written (a source that failed on its
        first frame): an empty recording would block the folder ("already holds a recording") and
        play back as no frames. The folder goes too when this recorder made it. Frames once
        written are never removed here."""
        if self.frames_written:
            self.close()
            return
        if self._lock_fd is not None or not self._closed:  # still ours: put back what --overwrite set aside
            self.restored = restore_set_aside(self.folder)
        self.close()
        if self.restored:
            return
        for name in (TIMESTAMPS, SESSION, RIG):
            (self.folder / name).unlink(missing_ok=True)
        for sub in ("left", "right", "disparity"):
            shutil.rmtree(self.folder / sub, ignore_errors=True)
        if self._made_folder:  # its lock file went as close() let go (another's may be there now)
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
            self._line_written = os.write(fd, line.encode("ascii")) > 0  # reset by _write_frame
            os.fsync(fd)
        finally:
            os.close(fd)

    def _write_session(self) -> None:
        cal = dataclasses.asdict(self._calibration) if self._calibration else None
        data = (json.dumps({**self._meta, "calibration": cal}, indent=2) + "\n").encode()
        atomic_write(self.folder / SESSION, data)
        self.bytes_written += len(data) - self._session_bytes  # the file replaced the last one
        self._session_bytes = len(data)


def _prepare(folder: Path, overwrite: bool) -> None:
    """Refuse to overwrite a recording (unless told to), to mix into a folder of other files, or
    to nest in another recording (its left/ would list the new one's folder among its frames)."""
    around = recording_around(folder)
    if around is not None:
        raise UserError(f"{folder} lies inside the recording {around}; record into a folder outside it")
    restore_set_aside(folder)  # a recording an interrupted --overwrite run had set aside
    if is_recording(folder):
        if not overwrite:
            raise UserError(f"{folder} already holds a recording; choose a new folder or pass --overwrite")
        set_aside(folder)  # deleted once the new recording has its first frame, else put back
    elif looks_like_recording(folder):
        raise UserError(f"{folder} holds a recording with a damaged index; {reindex_hint(folder)}")
    elif folder.exists() and (not folder.is_dir() or any(not _ignorable(p) for p in folder.iterdir())):
        raise UserError(f"{folder} exists and is not an empty folder; record into a new or empty folder")
    make_folder(folder, "recording folder")


def _ignorable(path: Path) -> bool:
    """A file an empty folder may still hold: the recording's lock, or a hidden file a file
    manager leaves (``.DS_Store``: the folder was refused as "not empty", review)."""
    return path.name == LOCK or (path.name.startswith(".") and path.is_file())


def is_recording(folder: Path) -> bool:
    return folder.is_dir() and read_session(folder)[0] is not None


def recording_around(folder: Path) -> Path | None:
    """The recording that ``folder`` lies inside (a damaged one too), or None."""
    for parent in folder.resolve().parents:
        if is_recording(parent) or (looks_like_recording(parent) and frames_on_disk(parent)):
            return parent
    return None


def read_timestamps(folder: Path, notes: list[str] | None = None) -> list[tuple[int, float]]:
    """(index, timestamp) of every committed frame; an unfinished last line is ignored, and with
    ``notes`` a damaged one is left out and said there (``parse_timestamps``)."""
    path = folder / TIMESTAMPS
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise missing_index_error(folder, f"{path} is missing") from None
    except OSError as exc:
        raise UserError(f"cannot read {path} ({exc.strerror}); check its permissions") from None
    return parse_timestamps(raw, path, notes)


def open_recording(folder: Path) -> SceneSource:
    """A recording as a source: its committed frames with their timestamps and calibration."""
    with writer_lock(folder) as locked, contextlib.suppress(OSError):  # read-only: play as it is
        if locked:
            restore_set_aside(folder)  # an --overwrite run killed before its first frame
    meta, problem = read_session(folder)
    if meta is None:
        raise missing_index_error(folder, problem or f"{folder / SESSION} is missing")
    remove_leftovers(folder)  # temporary files of a recorder that was killed while writing
    said: list[str] = []
    frames = read_timestamps(folder, said)
    if not frames and frames_on_disk(folder):  # an emptied index: not "no frames", a rebuild away
        raise missing_index_error(
            folder, f"{folder / TIMESTAMPS} lists no {'readable ' if said else ''}frame"
        )
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
    rectify = None
    if (folder / RIG).is_file():  # raw frames of a rig: rectified as they are read
        calibration, rectify = _rig(folder / RIG)
    description = f"recording {folder.name} ({plural(len(scenes), 'frame')})"
    # a source's frame numbers are not times: played back, they are not said as seconds
    untimed = meta.get("timestamps_from") == FRAME_NUMBER_TIMES
    stamps = None if untimed else [stamp for _, stamp in frames]
    source = SceneSource(scenes, description, stamps, calibration, rectify)
    origin = meta.get("start_time_ns")
    if isinstance(origin, int) and not isinstance(origin, bool):
        source.time_origin_ns = origin
    source.opening_notes.extend([*said, *index_notes(folder, frames)])
    kept = meta.get("source_notes")
    if isinstance(kept, list):  # what its source was said to be (a mono video), said again
        source.opening_notes.extend(
            f"{n} (this recording was made from it)" for n in kept if isinstance(n, str)
        )
    return source


def _rig(path: Path) -> tuple[Calibration, Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]]:
    """A recording's rig file -> the rectified geometry and the frames' rectification."""
    from app.engine.calibration.files import load_calibration
    from app.engine.calibration.rig import Rectifier

    try:
        calibration, rig = load_calibration(path)
    except UserError as exc:
        raise UserError(
            f"{path} (the rig its raw frames are rectified with) cannot be read: {exc}; restore it, "
            "or move it away to play the frames unrectified"
        ) from exc
    if rig is None:
        raise UserError(f"{path} holds no raw rig (K1, D1, K2, D2, R, T); restore it or move it away")
    return calibration, Rectifier(rig).rectify


def index_notes(folder: Path, frames: list[tuple[int, float]]) -> list[str]:
    """What a recording's index leaves out or gets wrong that it still plays with: pairs on disk
    after its last listed frame (an index cut short hid them unsaid), and time going back."""
    notes = []
    last = frames[-1][0] if frames else -1
    unlisted = [i for i in frames_on_disk(folder) if i > last]
    if unlisted:
        notes.append(
            f"{plural(len(unlisted), 'frame pair')} on disk after the last one {TIMESTAMPS} lists "
            f"({unlisted[0]:06d} on) {'is' if len(unlisted) == 1 else 'are'} not played; "
            f"{reindex_hint(folder)}"
        )
    back = next((i for (_, before), (i, t) in itertools.pairwise(frames) if t < before), None)
    if back is not None:
        notes.append(
            f"{TIMESTAMPS} goes back in time at frame {back:06d} (an edited index?): the times shown "
            "from there on are out of order"
        )
    return notes


def _calibration(meta: dict[str, Any], folder: Path) -> Calibration | None:
    cal = meta.get("calibration")
    if not cal:
        return None
    where = f"{folder / SESSION}"
    try:
        known = cal.get("baseline_known", True) is not False  # a placeholder baseline says so
        values = {
            key: number(value, f"calibration {key} in {where}")
            for key, value in cal.items()
            if key != "baseline_known"
        }
        calibration = Calibration(**values, baseline_known=known)
    except (TypeError, AttributeError):
        raise UserError(f"{where} has a damaged calibration; fix or remove it") from None
    number(calibration.focal_px, f"calibration focal_px in {where}", POSITIVE, "px")
    number(abs(calibration.baseline_m), f"calibration baseline_m in {where}", POSITIVE, "m")
    return calibration


def progress_text(frames: int, size_bytes: int, seconds: float, free_bytes: int | None = None) -> str:
    """'N frames · X MB · m:ss', then the write rate and, with ``free_bytes`` (the disk's), how
    long it lasts at that rate when that is under an hour (a camera at full rate fills gigabytes
    a minute): the window's REC badge and ``record``'s progress line."""
    elapsed = int(seconds)
    text = f"{plural(frames, 'frame')} · {size_bytes / 1e6:.1f} MB · {elapsed // 60}:{elapsed % 60:02d}"
    rate = size_bytes / seconds if seconds >= 2 else 0.0
    if rate > 0:
        text += f" · {rate / 1e6:.0f} MB/s"
        if free_bytes is not None and free_bytes / rate < 3600:
            text += f" · disk full in {max(0, int(free_bytes / rate / 60))} min"
    return text


class Pace:
    """Holds a recording to the rate of its source's timestamps, as a camera's would be: a pair
    is written no sooner than its timestamp's distance from the last on-time pair's, on the wall
    clock. A late pair (a slow disk) starts the count again, so the rate is never exceeded to
    catch up. For a source that makes frames on demand at an announced rate (a synthetic scene),
    which would otherwise be written as fast as the disk takes it."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        max_wait: float | None = None,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self.max_wait = max_wait  # a pair due later than this (a gap in a recording) starts the count again
        self._origin: tuple[float, float] | None = None  # (wall clock, timestamp) of the reference pair

    def wait(self, timestamp: float) -> None:
        """Return when the pair with ``timestamp`` is due."""
        now = self._clock()
        if self._origin is not None:
            wall, stamp = self._origin
            delay = wall + (timestamp - stamp) - now
            if delay > 0 and (self.max_wait is None or delay <= self.max_wait):
                self._sleep(delay)
                return
        self._origin = (now, timestamp)  # the first pair, a late one or a gap: the rate holds from here

    def reset(self) -> None:
        """The next pair starts the count (a seek, a pause, another source)."""
        self._origin = None


def record(
    source: StereoSource,
    recorder: Recorder,
    frames: int | None = None,
    seconds: float | None = None,
    pace: Pace | None = None,
) -> int:
    """Copy pairs until the source ends, ``frames`` are written or ``seconds`` of source time pass;
    with ``pace``, no faster than the source's timestamps go.

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
        if pace is not None:
            pace.wait(float(pair.timestamp))
        recorder.write(pair)
    return recorder.frames_written


class QueuedWriter:
    """A live source's recorder: its capture thread hands every pair to ``offer``, which queues
    it (up to ``max_bytes``), and a writer thread encodes and writes them, so the camera is never
    held up by PNG encoding or the disk. A pair that finds the queue full is dropped and counted
    (``dropped``, said when the recording ends), never lost unsaid. ``frames`` and ``seconds``
    (of the source's time) end the recording as ``record``'s do; ``done`` is then set."""

    def __init__(
        self,
        recorder: Recorder,
        frames: int | None = None,
        seconds: float | None = None,
        max_bytes: int = QUEUE_BYTES,
    ) -> None:
        self.recorder = recorder
        self.frames = frames
        self.seconds = seconds
        self.max_bytes = max_bytes
        self.captured = 0  # pairs offered while recording (the source's frames in the span)
        self.shape: tuple[int, ...] | None = None  # a captured image's, for the note on dropped pairs
        self.dropped = 0
        self.done = False
        self.error: BaseException | None = None
        self._queue: collections.deque[tuple[StereoPair, int]] = collections.deque()
        self._bytes = 0
        self._first_stamp: float | None = None
        self._closing = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="bi3d-record", daemon=True)
        self._thread.start()

    def offer(self, pair: StereoPair) -> None:
        """Queue one captured pair (called on the capture thread; never blocks on the disk)."""
        with self._cond:
            if self._closing or self.done or self.error is not None:
                return
            if self._first_stamp is None:
                self._first_stamp = float(pair.timestamp)
            if self.seconds is not None and float(pair.timestamp) - self._first_stamp >= self.seconds:
                self.done = True
                self._cond.notify_all()
                return
            self.captured += 1
            self.shape = pair.left.shape
            size = pair.left.nbytes + pair.right.nbytes
            size += 0 if pair.gt_disparity is None else pair.gt_disparity.nbytes
            if self._queue and self._bytes + size > self.max_bytes:
                self.dropped += 1
                return
            self._queue.append((pair, size))
            self._bytes += size
            if self.frames is not None and self.captured - self.dropped >= self.frames:
                self.done = True
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return
                pair, size = self._queue[0]
            try:
                self.recorder.write(pair)
            except BaseException as exc:  # a full disk: the recording keeps what it has, and says so
                with self._cond:
                    self.error = exc
                    self.dropped += len(self._queue)  # what was waiting is lost with the disk
                    self._queue.clear()
                    self._bytes = 0
                    self._cond.notify_all()
                return
            with self._cond:
                self._queue.popleft()
                self._bytes -= size
                self._cond.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the recording to end (``done`` or an error); True if it has."""
        with self._cond:
            self._cond.wait_for(lambda: self.done or self.error is not None, timeout)
            return self.done or self.error is not None

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    def close(self) -> None:
        """Take no more pairs and write the ones queued (their files are the recording's)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join()


def record_live(
    source: StereoSource,
    recorder: Recorder,
    frames: int | None = None,
    seconds: float | None = None,
    started: Callable[[QueuedWriter], object] | None = None,
) -> QueuedWriter:
    """``record`` for a live source (a camera): every pair its capture thread delivers, through a
    ``QueuedWriter``; reading the source only keeps it running and notices its end. Returns the
    writer (its ``captured`` and ``dropped`` counts); a write error is raised after the frames
    queued before it are accounted for."""
    writer = QueuedWriter(recorder, frames, seconds)
    if started is not None:  # the caller keeps the counts when Ctrl-C ends the recording
        started(writer)
    source.add_capture_listener(writer.offer)  # type: ignore[attr-defined]
    try:
        while not writer.wait(0.0):
            if source.read() is None:  # closed or ended
                break
    finally:
        source.remove_capture_listener(writer.offer)  # type: ignore[attr-defined]
        writer.close()
    if writer.error is not None:
        raise writer.error
    return writer


def dropped_note(writer: QueuedWriter, source: str) -> str:
    """What a live recording could not keep, and what to change."""
    size = "" if writer.shape is None else f" of {writer.shape[1]} x {writer.shape[0]} px"
    return (
        f"{writer.dropped} of the {plural(writer.captured, 'frame')} {source} delivered were dropped: "
        f"writing lossless PNG pairs{size} could not keep up on this machine; record a smaller camera "
        "mode or a lower frame rate, or onto a faster disk"
    )
