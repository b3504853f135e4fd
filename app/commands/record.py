"""`bi3d-studio record`: copy any source into a recording folder that plays back as a source."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.commands.arguments import real, whole


def run(args: argparse.Namespace) -> int:
    from app.engine.errors import UserError
    from app.engine.sources.base import SourceEvent, plural
    from app.engine.sources.recording import Recorder, record

    if args.reindex:
        return _reindex(args)
    if args.dir is None:
        args.usage_error("give SOURCE DIR (or --reindex DIR)")
    _refuse_overlap(args.source, Path(args.dir))

    def report(event: SourceEvent) -> None:  # a camera lost and found again, said as it happens
        if event.kind != "ended":
            print(f"bi3d-studio record: {event.message}", file=sys.stderr)

    from app.engine.sources.spec import open_source

    with open_source(args.source, on_event=report) as source:
        recorder = Recorder(args.dir, overwrite=args.overwrite, source=source.describe())
        print(f"recording {source.describe()} to {args.dir}")
        try:
            record(source, recorder, args.frames, args.seconds)
        except KeyboardInterrupt:  # the usual way to end a live recording; what is written stays
            print("stopped")
        except UserError as exc:  # one line still, saying what was kept
            recorder.discard()  # nothing recorded: no empty recording left to block the folder
            if recorder.frames_written:
                kept = plural(recorder.frames_written, "frame")
                raise UserError(f"{exc}; {args.dir} keeps the {kept} recorded before it") from exc
            raise
        except BaseException:
            recorder.discard()
            raise
        finally:
            recorder.close()
        for note in source.notes:  # e.g. a video recorded in the other layout than it holds
            print(f"note: {note}")
    print(f"wrote {plural(recorder.frames_written, 'frame')} to {args.dir}")
    return 0


def _reindex(args: argparse.Namespace) -> int:
    from app.engine.sources.recording_index import rebuild_index

    if args.dir is not None:
        args.usage_error("--reindex takes the recording's folder alone: record --reindex DIR")
    count, notes = rebuild_index(Path(args.source))
    for note in notes:
        print(f"note: {note}")
    print(f"indexed {count} frame(s) in {args.source}")
    return 0


def source_paths(spec: str) -> list[Path]:
    """The files or folders a source spec reads (none for cameras and synthetic scenes)."""
    text = spec.strip()
    scheme, _, rest = text.partition(":")
    if scheme.lower() in ("camera", "synthetic"):
        return []
    if scheme.lower() == "video":
        text = rest.split("?", 1)[0]
    if Path(text).exists():
        return [Path(text)]
    return [Path(part.strip()) for part in text.split(",") if part.strip()]


def _refuse_overlap(spec: str, destination: Path) -> None:
    """A destination that is, contains or lies inside what is read would destroy it while read."""
    from app.engine.errors import UserError
    from app.engine.sources.recording_index import overlaps

    for path in source_paths(spec):
        if overlaps(path, destination):
            raise UserError(
                f"the recording folder {destination} overlaps the source {path} (the same folder, "
                "inside it or around it); record into a folder outside the source"
            )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "record",
        help="record a source to a folder",
        description=(
            "Record SOURCE (a folder, a video, LEFT,RIGHT, camera:0,1, camera:0, synthetic; see "
            "'Sources' in the README) into DIR: lossless PNG pairs, timestamps, calibration and ground "
            "truth when the source has it. DIR plays back as a source. Stops when the source ends, "
            "after --frames or --seconds (of the source's time), or on Ctrl-C."
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
        "--reindex",
        action="store_true",
        help="rebuild the index (timestamps.txt, session.json) of the recording SOURCE from its frames",
    )
    p.set_defaults(func=run, usage_error=p.error)
