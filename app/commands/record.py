"""`bi3d-studio record`: copy any source into a recording folder that plays back as a source."""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from app.commands.arguments import real, whole

if TYPE_CHECKING:
    from app.engine.calibration.rig import StereoRig
    from app.engine.sources.base import StereoSource
    from app.engine.sources.recording import Pace, Recorder
    from app.engine.types import Calibration


EXIT_FAILURE = 1  # as ``app.cli``'s: a failure while running (a full disk), not a usage error


def run(args: argparse.Namespace) -> int:
    from app.engine.sources.recording import WriteFailed

    if args.reindex:
        return _reindex(args)
    if args.dir is None:
        args.usage_error("give SOURCE DIR (or --reindex DIR)")
    if not args.dir.strip():  # Path("") is the current folder: said as "." otherwise
        args.usage_error("DIR is empty; give the folder to record into, e.g. 'record synthetic rec'")
    refuse_overlap(args.source, Path(args.dir))
    try:
        return _record(args)
    except WriteFailed as exc:  # the disk, not the input: what was kept is in the message
        print(f"bi3d-studio record: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE


def _record(args: argparse.Namespace) -> int:
    from app.commands.common import EXIT_INTERRUPTED
    from app.engine.errors import Terminated, UserError
    from app.engine.sources.base import SourceEvent, plural
    from app.engine.sources.layout import depth_is_noise, recording_words
    from app.engine.sources.recording import QueuedWriter, Recorder, dropped_note, record, record_live

    said: set[str] = set()
    shown: list[Progress] = []  # the progress line, cleared before a message is printed under it

    def report(event: SourceEvent) -> None:  # a camera lost and found again, said as it happens
        if event.kind == "ended":
            return
        said.add(event.message)
        for line in shown:
            line.clear()
        if event.kind == "skipped":  # a damaged frame of many: a note, not an error's prefix (review)
            print(f"note: {event.message}")
        else:
            print(f"bi3d-studio record: {event.message}", file=sys.stderr)

    from app.engine.sources.spec import open_source

    code = 0
    calibration, rig, calib_note = _calibration(args)
    with open_source(args.source, on_event=report) as source:
        if rig is not None and getattr(source, "rectifies_frames", False):
            raise UserError(
                f"{args.source} keeps its raw rig's calibration (rig.yml) and plays rectified; "
                "leave out --calib"
            )
        recorder = Recorder(
            args.dir, calibration, overwrite=args.overwrite, source=source.describe(), rig=rig
        )
        recorder.keep_times_of(source)  # its frames' times since 1970, or that they are frame numbers
        if calib_note:
            print(f"note: {calib_note}")
        print(f"recording from {source.describe()} into {args.dir}")  # "recording recording rec" read oddly
        for note in getattr(source, "opening_notes", ()):  # a folder's images paired by time, or skipped
            print(f"note: {note}")
            said.add(note)
        live: list[QueuedWriter] = []  # a camera's writer, for its counts (also after Ctrl-C)
        progress = Progress(recorder)
        shown.append(progress)
        progress.start()
        try:
            try:
                if source.live and hasattr(source, "add_capture_listener"):  # every frame, not the newest
                    record_live(source, recorder, args.frames, args.seconds, started=live.append)
                else:
                    record(source, recorder, args.frames, args.seconds, _pace(source))
            finally:  # before anything else is said
                progress.stop()
            if not recorder.frames_written:  # every frame skipped as damaged: no empty recording
                raise UserError(
                    f"no frame of {source.describe()} could be read (each is named above): nothing recorded"
                )
        except KeyboardInterrupt as exc:  # the usual way to end a live recording; what is written stays
            how = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "stopped"
            code = EXIT_INTERRUPTED  # as every command stopped so: scripts tell it from a finished one
            if not recorder.frames_written:  # an empty recording would block the folder
                recorder.discard()
                kept = f"; {args.dir} keeps the recording it held before" if recorder.restored else ""
                print(f"{how} before the first frame: nothing recorded{kept}", file=sys.stderr)
                return code
            print(how)
        except UserError as exc:  # one line still, saying what was kept
            recorder.discard()  # nothing recorded: no empty recording left to block the folder
            if recorder.frames_written:
                kept = plural(recorder.frames_written, "frame")
                raise type(exc)(f"{exc}; {args.dir} keeps the {kept} recorded before it") from exc
            if recorder.restored:
                raise type(exc)(f"{exc}; {args.dir} keeps the recording it held before") from exc
            if "nothing recorded" not in str(exc):  # the folder went unsaid (a file-size limit: review)
                raise type(exc)(f"{exc}; nothing was recorded") from exc
            raise
        except BaseException:
            recorder.discard()
            raise
        finally:
            # a video's layout, decided on its first frame, and a mono video's note
            recorder.set_source(source.describe(), source.notes)
            recorder.close()
        if recorder.rig_note:  # the rig rescaled to the frames' size
            print(f"note: {recorder.rig_note}")
        for note in source.notes:  # e.g. a video recorded in the other layout than it holds
            if note not in said:  # a skipped frame was said as it happened
                print(f"note: {recording_words(note)}")
        if code == 0 and depth_is_noise(source.notes):  # its pairs are of no use: scripts can tell
            code = 1
        if live and live[0].dropped:
            print(f"note: {dropped_note(live[0], source.describe())}")
        if code == 0 and args.frames and recorder.frames_written < args.frames and source.ended:
            # as depth says it (review: "wrote 9 frames" of 50 asked for, unsaid)
            print(
                f"note: {source.describe()} ended after {plural(recorder.frames_written, 'frame')} of the "
                f"{args.frames} asked for"
            )
        if recorder.other_calibrations:  # played back, every frame would get the first one's
            print(
                f"note: {plural(recorder.other_calibrations, 'frame')} of {source.describe()} carry another "
                "calibration than the first frame's (each scene its own calib.txt, or none), and a "
                "recording keeps one for all its frames: record such scenes one by one"
            )
    print(f"wrote {plural(recorder.frames_written, 'frame')} to {args.dir}")
    return code


class Progress(threading.Thread):
    """What a recording holds so far, on stderr as it runs: frames, size, time, rate and when the
    disk fills (it said nothing for ten minutes while writing 15 GB: review). On a terminal one
    line rewritten each second; into a file or pipe, a line every ``LOG_EVERY_S``."""

    LOG_EVERY_S = 30.0

    def __init__(self, recorder: Recorder, stream: TextIO | None = None) -> None:
        super().__init__(name="bi3d-record-progress", daemon=True)
        self.recorder = recorder
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every = 1.0 if self.tty else self.LOG_EVERY_S
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # the thread's line and the main thread's clearing of it
        self._started_at = time.monotonic()
        self._width = 0

    def run(self) -> None:
        while not self._stopped.wait(self.every):
            self.say()

    def say(self) -> None:
        from app.engine.sources.recording import progress_text

        recorder = self.recorder
        try:
            free: int | None = shutil.disk_usage(recorder.folder).free
        except OSError:
            free = None
        seconds = time.monotonic() - self._started_at
        text = f"recording: {progress_text(recorder.frames_written, recorder.bytes_written, seconds, free)}"
        with self._lock:
            if self.tty:  # over the last one, blanking what it was longer by
                self.stream.write("\r" + text.ljust(self._width))
                self._width = len(text)
            else:
                self.stream.write(text + "\n")
            self.stream.flush()

    def clear(self) -> None:
        """Blank a terminal's progress line (a message goes there; the next tick draws it again)."""
        with self._lock:
            if self.tty and self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
                self._width = 0

    def stop(self) -> None:
        self._stopped.set()
        if self.is_alive():
            self.join()
        self.clear()  # what follows says how it ended


def _calibration(args: argparse.Namespace) -> tuple[Calibration | None, StereoRig | None, str | None]:
    """--calib (and --calib2): the rectified geometry, the raw rig (kept as the recording's
    rig.yml, its frames rectified with it as they play) and what loading it noticed."""
    from app.engine.errors import UserError

    if not args.calib:
        if args.calib2:
            raise UserError("--calib2 is the second file of a calibration: give --calib too")
        return None, None, None
    from app.engine.calibration.files import baseline_note, load_calibration, projection_note

    calibration, rig = load_calibration(args.calib, args.calib2)
    notes = (baseline_note(calibration, args.calib), projection_note(rig, args.calib))
    return calibration, rig, "; ".join(n for n in notes if n) or None


def _pace(source: StereoSource) -> Pace | None:
    """A synthetic scene is recorded at the rate it announces, as a camera would be (written as
    fast as the disk took it, "@ 10 fps" filled gigabytes a minute); files go as fast as they
    can, announcing no rate, their timestamps kept."""
    from app.engine.sources.recording import Pace
    from app.engine.sources.synthetic import SyntheticSource

    return Pace() if isinstance(source, SyntheticSource) else None


def _reindex(args: argparse.Namespace) -> int:
    from app.engine.sources.recording_index import rebuild_index

    if args.dir is not None or args.calib or args.calib2:
        args.usage_error("--reindex takes the recording's folder alone: record --reindex DIR")
    if not args.source.strip():
        args.usage_error("DIR is empty; give the recording's folder: record --reindex DIR")
    count, notes = rebuild_index(Path(args.source))
    for note in notes:
        print(f"note: {note}")
    print(f"indexed {count} frame(s) in {args.source}")
    return 0


def source_paths(spec: str) -> list[Path]:
    """The files or folders a source spec reads (none for cameras and synthetic scenes)."""
    text = spec.strip()
    if not text:  # no source: not the current folder (Path("") is "."), which overlaps everything
        return []
    scheme, _, rest = text.partition(":")
    if scheme.lower() in ("camera", "synthetic"):
        return []
    if scheme.lower() == "video":
        text = rest.split("?", 1)[0]
    if Path(text).exists():
        return [Path(text)]
    return [Path(part.strip()) for part in text.split(",") if part.strip()]


def refuse_overlap(
    spec: str, destination: Path, what: str = "recording folder", verb: str = "record"
) -> None:
    """A destination that is, contains or lies inside what is read would destroy it while read
    (or, inside a folder of pairs, be read as frames the next time)."""
    from app.engine.errors import UserError
    from app.engine.sources.recording_index import overlaps

    for path in source_paths(spec):
        if overlaps(path, destination):
            raise UserError(
                f"the {what} {destination} overlaps the source {path} (the same folder, "
                f"inside it or around it); {verb} into a folder outside the source"
            )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "record",
        help="record a source to a folder",
        description=(
            "Record SOURCE (a folder, a video, LEFT,RIGHT, camera:0,1, camera:0, synthetic; see "
            "'Sources' in the README) into DIR: lossless PNG pairs, timestamps, calibration and ground "
            "truth when the source has it. DIR plays back as a source. A camera or a synthetic scene "
            "is recorded at its frame rate; files and videos as fast as they are read, their "
            "timestamps kept. Stops when the source ends, after --frames or --seconds (of the "
            "source's time), or on Ctrl-C or SIGTERM (exit status 130, what was recorded kept). A full disk "
            "ends it with exit status 1, the frames before it kept; so does a video whose frames "
            "look split the other way or no stereo pair (the pairs are kept, said as such)."
        ),
    )
    p.add_argument("source", help="what to record (with --reindex: the recording to index)")
    p.add_argument("dir", nargs="?", help="recording folder (new or empty)")
    p.add_argument("--frames", type=whole("--frames", 1), help="stop after N frames")
    p.add_argument(
        "--seconds",
        type=real("--seconds", 0, None, "s", low_open=True),
        help="stop after S seconds of source time",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a recording already in DIR")
    p.add_argument(
        "--calib",
        help="the rig's calibration, kept with the recording for depth in metres: a raw rig's "
        "(OpenCV YAML/XML, Kalibr, ROS camera_info with --calib2) keeps the frames raw and plays "
        "them rectified; a rectified pair's (Middlebury calib.txt, stereodemo JSON) as it is",
    )
    p.add_argument("--calib2", help="the right camera's ROS camera_info, or OpenCV's extrinsics.yml")
    p.add_argument(
        "--reindex",
        action="store_true",
        help="rebuild the index (timestamps.txt, session.json) of the recording SOURCE from its frames",
    )
    p.set_defaults(func=run, usage_error=p.error)
