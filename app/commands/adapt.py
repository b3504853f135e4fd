"""`bi3d-studio adapt`: fine-tune the depth model to a rig from its own unlabeled footage."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from app.commands.arguments import real, whole


def run(args: argparse.Namespace) -> int:
    from app.commands.common import EXIT_INTERRUPTED, refuse_inside_recording
    from app.commands.record import refuse_overlap
    from app.engine.errors import UserError
    from app.engine.training.adapt import AdaptCancelled, AdaptConfig, AdaptProgress, adapt

    out = Path(args.out)
    report = out.with_suffix(".json")  # AdaptConfig.report_path: beside the checkpoint
    if out.suffix.lower() == ".json":  # the report would have been written over the checkpoint
        raise UserError(
            f"--out {out} names the checkpoint, and its report goes beside it as NAME.json; use .pt"
        )
    # a recorded frame was replaced by the checkpoint (--overwrite), or the checkpoint and its
    # report added to the recording, as depth, flow and record refuse (review)
    refuse_inside_recording(out)
    refuse_overlap(args.source, out, "checkpoint", "write the checkpoint")
    resuming = Path(args.out + ".partial").exists()
    for kept in (out, report):
        if kept.is_file() and not resuming and not args.overwrite:
            # a finished adaptation (minutes of work), or a file of the user's where the report
            # goes: replaced only when asked; a partial adaptation resumes
            raise UserError(f"{kept} already exists; choose another --out or pass --overwrite to replace it")
    cfg = AdaptConfig(
        source=args.source,
        out=args.out,
        weights=args.weights,
        steps=args.steps,
        minutes=args.minutes,
        frames=args.frames,
        eval_frames=args.eval_frames,
        seed=args.seed,
        calib=args.calib,
    )
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    bar = _Bar()

    def progress(p: AdaptProgress) -> None:
        bar.show(p.stage, p.done, p.total, p.message)

    cancel = threading.Event()
    made = _missing_folders(out.parent)  # the run makes them: a refusal takes them back
    with _first_ctrl_c_cancels(cancel):
        try:
            result = adapt(cfg, progress, cancel)
        except AdaptCancelled as exc:  # asked for (Ctrl-C): not an input error, and its partial stays
            bar.end()
            print(f"bi3d-studio adapt: {exc}", file=sys.stderr)
            _remove_if_empty(made)
            return EXIT_INTERRUPTED
        except BaseException:
            bar.end()
            _remove_if_empty(made)  # a refused footage left an empty --out folder behind
            raise
        bar.end()
    from app.engine.session import Session
    from app.engine.sources.base import plural

    # the count is said in the heading ("frames: 5 -> 5" read as a figure that did not move: review)
    held = int(result.before.get("frames", 0))
    heading = f"the {plural(held, 'held-back frame')}" if held else "held-back frames"
    print(f"{heading}, before -> after:")
    for line in Session.adapt_figures(result):
        print(f"  {line}")
    if result.warning is not None:
        print(f"note: {result.warning}")
    # a resumed run's training began in an earlier run: its own minutes read as the whole (review)
    trained = float(result.provenance.get("train_elapsed_s", result.elapsed_s))
    resumed = ", resumed" if result.provenance.get("resumed") else ""
    took = f"{plural(result.steps, 'step')}, {trained / 60:.1f} min of training{resumed}"
    took += f"; this run {result.elapsed_s / 60:.1f} min"
    print(f"wrote {result.out} ({took}) and {result.report_path}")
    return 0


def _missing_folders(folder: Path) -> list[Path]:
    """The folders of ``folder``'s path that do not exist yet, deepest first."""
    missing = []
    while not folder.exists() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove the folders a run made, deepest first, as long as they are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # something was written there (a partial checkpoint): kept
            return


class _Bar:
    """On a terminal, one line on stderr, redrawn: stage, a bar, what is happening. Elsewhere (a
    log, a pipe) one line on stdout per stage, so stderr keeps to the one-line errors."""

    LOG_EVERY_S = 30.0  # a log hears from a long stage this often (it went quiet for minutes)

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.drawn = False
        self.stage = ""
        self.logged = 0.0

    def show(self, stage: str, done: int, total: int, message: str) -> None:
        if not self.tty:
            now = time.monotonic()
            if stage == "done":  # the command's own last line says what it wrote (it came twice)
                return
            if stage != self.stage or now - self.logged >= self.LOG_EVERY_S:
                print(f"adapt: {message}", flush=True)
                self.logged = now
            self.stage = stage
            return
        width = 24
        filled = round(width * done / total) if total else 0
        line = f"\r{stage:<9} [{'#' * filled}{'.' * (width - filled)}] {message}"
        print(f"{line[:110]:<110}", end="", file=sys.stderr, flush=True)
        self.drawn = True

    def end(self) -> None:
        if self.drawn:
            print(file=sys.stderr)


class _first_ctrl_c_cancels:
    """The first Ctrl-C asks the run to stop at the next step (it saves and says how to resume);
    a second one interrupts at once. SIGTERM (a scheduler, ``kill``, ``timeout``) stops it as the
    first Ctrl-C does: it ended the run at once, "interrupted", its last steps since the periodic
    save lost (review)."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel
        self.previous: Any = None
        self.previous_term: Any = None

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signals reach the main thread only (tests call main() from others)
        self.previous = signal.getsignal(signal.SIGINT)
        self.previous_term = signal.getsignal(signal.SIGTERM)

        def handler(_signum: int, _frame: FrameType | None) -> None:
            self.cancel.set()
            signal.signal(signal.SIGINT, signal.default_int_handler)
            print("\nstopping after this step (Ctrl-C again to stop at once)", file=sys.stderr)

        def terminated(_signum: int, _frame: FrameType | None) -> None:
            self.cancel.set()
            print("\nterminated (SIGTERM): stopping after this step", file=sys.stderr)

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, terminated)

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        if self.previous_term is not None:
            signal.signal(signal.SIGTERM, self.previous_term)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "adapt",
        help="fine-tune the depth model to your rig from unlabeled footage",
        description=(
            "Fine-tune the bundled Bi3D model (or --weights) on rectified footage of your rig without "
            "ground truth: SGBM's left-right-checked pixels are the labels. Every 5th frame is held "
            "back; the photometric error, left-right consistency and agreement with those pixels (and "
            "dense bad-2 when the footage has ground truth) are reported before and after. Writes OUT "
            "(load it with --weights) and OUT's name with .json (the report). Progress is saved in "
            "OUT.partial: Ctrl-C stops cleanly and the same command resumes."
        ),
    )
    p.add_argument("source", help="rectified footage: a recording folder, a video, a folder of pairs")
    p.add_argument("--out", required=True, help="the adapted checkpoint to write (e.g. adapted.pt)")
    p.add_argument("--weights", help="the model to start from (default: the bundled one)")
    p.add_argument(
        "--calib",
        help="the rig's calibration (OpenCV YAML/XML, Kalibr, ROS...): a raw rig's frames are rectified "
        "before adapting",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an adapted checkpoint already at --out")
    p.add_argument(
        "--steps", type=whole("--steps", 1, 10**6), default=600, help="training steps (default 600)"
    )
    p.add_argument(
        "--minutes",
        type=real("--minutes", 0, 10**4, "min", low_open=True),
        default=9.0,
        help="training time budget; training stops at --steps or here (default 9)",
    )
    p.add_argument(
        "--frames", type=whole("--frames", 2, 10**5), default=300, help="frames used, spread (default 300)"
    )
    p.add_argument(
        "--eval-frames",
        type=whole("--eval-frames", 1, 10**4),
        default=16,
        help="held-back frames the report measures (default 16)",
    )
    p.add_argument("--seed", type=whole("--seed", 0), default=0)
    p.add_argument("--threads", type=whole("--threads", 1, 1024), help="torch CPU threads")
    p.set_defaults(func=run)
