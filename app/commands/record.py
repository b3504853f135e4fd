"""`bi3d-studio record`: copy any source into a recording folder that plays back as a source."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    from app.engine.errors import UserError
    from app.engine.sources.base import SourceEvent, plural
    from app.engine.sources.recording import Recorder, record
    from app.engine.sources.spec import open_source

    if args.frames is not None and args.frames < 1:
        raise UserError(f"--frames must be at least 1, got {args.frames}")
    if args.seconds is not None and args.seconds <= 0:
        raise UserError(f"--seconds must be positive, got {args.seconds:g}")

    def report(event: SourceEvent) -> None:  # a camera lost and found again, said as it happens
        if event.kind != "ended":
            print(f"bi3d-studio record: {event.message}", file=sys.stderr)

    with open_source(args.source, on_event=report) as source:
        recorder = Recorder(args.dir, overwrite=args.overwrite, source=source.describe())
        print(f"recording {source.describe()} to {args.dir}")
        try:
            record(source, recorder, args.frames, args.seconds)
        except KeyboardInterrupt:  # the usual way to end a live recording; what is written stays
            print("stopped")
        finally:
            recorder.close()
    print(f"wrote {plural(recorder.frames_written, 'frame')} to {args.dir}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "record",
        help="record a source to a folder",
        description=(
            "Record SOURCE (a folder, a video, LEFT,RIGHT, camera:0,1, camera:0, synthetic; see "
            "app/engine/sources/spec.py) into DIR: lossless PNG pairs, timestamps, calibration and ground "
            "truth when the source has it. DIR plays back as a source. Stops when the source ends, "
            "after --frames or --seconds (of the source's time), or on Ctrl-C."
        ),
    )
    p.add_argument("source", help="what to record")
    p.add_argument("dir", help="recording folder (new or empty)")
    p.add_argument("--frames", type=int, help="stop after N frames")
    p.add_argument("--seconds", type=float, help="stop after S seconds of source time")
    p.add_argument("--overwrite", action="store_true", help="replace a recording already in DIR")
    p.set_defaults(func=run)
