"""`bi3d-studio calib`: check a pair's rectification, or calibrate a rig from chessboard views."""

from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING, Any

from app.commands.arguments import report_file, whole

if TYPE_CHECKING:  # the engine is imported when a command runs, not when the parser is built
    from app.engine.calibration.check import BoardReport


def parse_pattern(text: str) -> tuple[int, int]:
    """'9x6' -> (9, 6): inner corners per row (cols) x per column (rows)."""
    try:
        cols, rows = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"pattern must be COLSxROWS inner corners, e.g. 9x6, got {text!r}"
        ) from None
    from app.engine.calibration.chessboard import check_pattern
    from app.engine.errors import UserError

    try:
        check_pattern((cols, rows))
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return cols, rows


SQUARE_NOTE_M = 1.0  # a chessboard square this large is centimetres or millimetres typed as metres
USABLE_RMS_PX = 1.0  # reprojection or epipolar error past which a calibration is not written (--force)
SQUARE_OFF_PERCENT = 3.0  # a board measured this far from --square: metric depths are off as far
UNCHECKED_EXIT = 3  # calib check's exit status when nothing could be checked (verdict unknown)


def positive_metres(text: str, what: str = "square size") -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{what} must be a positive number of metres, got {text!r}")
    return value


def baseline_metres(text: str) -> float:
    """--baseline: metres, and a rig's (5000 was written unsaid, every depth 1000 x too far)."""
    from app.engine.calibration.files import LONGEST_BASELINE_M

    value = positive_metres(text, "the baseline")
    if value > LONGEST_BASELINE_M:
        raise argparse.ArgumentTypeError(
            f"--baseline is in metres: {value:g} m is longer than a stereo rig's; {value:g} mm is "
            f"--baseline {value / 1000:g}, {value:g} cm is --baseline {value / 100:g}"
        )
    return value


def run_check(args: argparse.Namespace) -> int:
    from app.engine.calibration.check import (
        SWAPPED,
        check_board,
        check_epipolar,
        swapped_verdict,
        verdict_for,
    )
    from app.engine.calibration.files import load_for_frames
    from app.engine.calibration.rig import Rectifier
    from app.engine.depth.limits import check_image_size
    from app.engine.errors import UserError
    from app.engine.formats import atomic_write, read_pair_rgb
    from app.engine.types import check_pair
    from app.vocabulary import cli_words

    if args.square is not None and args.pattern is None:
        raise UserError("--square is the size of a chessboard's squares: give the board too (--pattern 9x6)")
    left, right = read_pair_rgb(args.left, args.right)
    check_pair(left, right)
    check_image_size(left.shape[0], left.shape[1], "feature matching needs room around each feature")
    calibration = None
    if args.calib:
        size = (left.shape[1], left.shape[0])
        calibration, rig, note = load_for_frames(args.calib, args.calib2, size)
        if note:
            print(f"note: {note}")
        if rig is not None:
            left, right = Rectifier(rig).rectify(left, right)
            print(f"rectified with {args.calib} (raw rig, {rig.image_size[0]}x{rig.image_size[1]})")
    report = check_epipolar(left, right, args.detector, args.max_features)
    figures: dict[str, Any] = report.summary(cli_words)
    if report.matches:
        print(f"matches: {report.matches} ({args.detector}, consistent with one epipolar geometry)")
    else:  # "0 (orb, consistent with one epipolar geometry)" contradicted itself (review)
        print(f"matches: none ({args.detector} found no feature seen in both images)")
    if report.misalignment is not None:
        mean = round(report.vertical_mean_px, 3) + 0.0  # not "-0.000 px"
        print(
            f"vertical offset: mean {mean:+.3f} px, rms {report.vertical_rms_px:.3f} px, "
            f"p95 {report.vertical_p95_px:.3f} px"
        )
        print(f"misalignment: {report.misalignment}")
    board = None
    if args.pattern:
        try:
            board = check_board(left, right, args.pattern, args.square, calibration)
        except UserError as exc:  # no board in view: the check above stands (exit 2 read as failed)
            if "chessboard found" not in str(exc):
                raise
            print(f"note: the board's check skipped: {exc}")
    verdict, reason = report.verdict, report.reason_in(cli_words)
    if board is not None and verdict_for(board.epipolar_rms_px) != verdict:
        # the corners are found to a tenth of a pixel, where the board's squares fool the feature
        # matches: "not rectified (vertical RMS 9.98 px ...)" stood above "epipolar rms 0.087 px over
        # 54 corners" for a rectified pair, exit 1 (review)
        verdict = verdict_for(board.epipolar_rms_px)
        features = f"{report.vertical_rms_px:.2f} px" if report.misalignment is not None else "no verdict"
        better = report.misalignment is None or board.epipolar_rms_px < report.vertical_rms_px
        why = ": the board's repeated squares match a period away" if better else ""
        reason = (
            f"the chessboard's {board.corners} corners decide: epipolar rms {board.epipolar_rms_px:.3f} px; "
            f"the feature matches read {features} ({report.verdict}){why}"
        )
        figures.update(verdict=verdict, reason=reason, features_verdict=report.verdict)
    shown = swapped_verdict(verdict, report.swapped)  # after the board's say: it read "rectified", exit 1
    if shown != verdict:
        figures.update(verdict=shown, rows_verdict=verdict)
        verdict = shown
    print(f"verdict: {verdict} ({reason})")
    if board is not None:
        figures.update(_board_figures(board, args))
    if args.json:
        atomic_write(args.json, (json.dumps(figures, indent=2) + "\n").encode())
        print(f"wrote {args.json}")
    # scripts can gate on a rig out of calibration, and on cameras the wrong way round (depth
    # refuses such a pair: the check passed it, "rectified", exit 0: review)
    if verdict == "unknown":  # nothing was checked: exit 0 passed such a pair in a script (review)
        return UNCHECKED_EXIT
    return 1 if verdict in ("not rectified", SWAPPED) else 0


def _board_figures(board: BoardReport, args: argparse.Namespace) -> dict[str, Any]:
    """Print a ``BoardReport``: the corners' rows, and the square size measured when the check
    could (--square, and --calib of a measured baseline); its figures for --json."""
    from app.engine.calibration.files import baseline_field

    print(f"chessboard: epipolar rms {board.epipolar_rms_px:.3f} px over {board.corners} corners")
    figures: dict[str, Any] = {"epipolar_rms_px": round(board.epipolar_rms_px, 4)}
    if board.misalignment is not None:
        print(f"chessboard corners' misalignment: {board.misalignment}")
        m = board.misalignment
        figures.update(
            board_shift_px=round(m.shift_px, 4),
            board_roll_deg=round(m.roll_deg, 4),
            board_scale_percent=round(m.scale_percent, 4),
        )
    figures |= {
        "square_m": board.square_m,
        "square_measured_m": board.square_measured_m,
        "square_error_percent": board.square_error_percent,
    }
    if board.square_m is None or board.square_measured_m is None or board.square_error_percent is None:
        why = (
            "give --calib for focal length and baseline"
            if not args.calib
            else "give --square, the true size, to compare"
            if board.square_m is None
            else "the calibration has no measured baseline"
        )
        print(f"square size: not checked ({why})")
        return figures
    measured, given = board.square_measured_m * 1000, board.square_m * 1000
    print(
        f"square size: {measured:.2f} mm measured, {given:.2f} mm given ({board.square_error_percent:+.2f} %)"
    )
    ratio = measured / given if given > 0 else 1.0
    if 0.5 < ratio < 2.0 and abs(board.square_error_percent) > SQUARE_OFF_PERCENT:  # said, not just shown
        print(
            f"note: if the squares are {given:.2f} mm, depths in metres from {args.calib} read "
            f"{abs(board.square_error_percent):.1f} % too {'near' if ratio < 1 else 'far'} (its baseline is "
            f"off by as much); if they are {measured:.1f} mm, give --square {measured / 1000:.4f}"
        )
    slips = ((1000.0, "millimetres"), (100.0, "centimetres"), (0.001, "kilometres"))
    if not 0.5 < ratio < 2.0 and not any(0.8 * f < ratio < 1.25 * f for f, _ in slips):
        # ten times off read "+900.69 %" under a "rectified" verdict, with nothing said (review)
        print(
            f"note: the board measures {ratio:.3g} x the square given: --square is not this board's, "
            f"or {args.calib} was calibrated with another square size (its baseline is as far off)"
        )
    for factor, unit in slips:
        if 0.8 * factor < ratio < 1.25 * factor:  # a unit slip, not a poor calibration
            print(
                f"note: the board measures {ratio:.0f} x the square given: the calibration's baseline "
                f"({baseline_field(args.calib)}) looks written in {unit}, not metres"
                if factor > 1
                else "note: the board measures a thousandth of the square given: --square "
                "is in metres (0.025 for 25 mm)"
                if board.square_m >= 1.0  # a square of a metre or more: --square was the slip
                else "note: the board measures a thousandth of the square given: the calibration's "
                f"baseline ({baseline_field(args.calib)}) looks a thousand times too short (Middlebury "
                "writes millimetres, the others metres)"
            )
    return figures


def run_chessboard(args: argparse.Namespace) -> int:
    from app.engine.calibration.chessboard import ChessboardTarget

    return _calibrate(args, ChessboardTarget(args.pattern, args.square))


def run_charuco(args: argparse.Namespace) -> int:
    from app.engine.calibration.charuco import CharucoTarget

    target = CharucoTarget(args.squares, args.square, args.marker, args.dictionary, args.legacy)
    return _calibrate(args, target)


def _check_out(path: str) -> str:
    """Before any work: ``--out``'s folder must exist, and a file already there must be a rig
    calibration (it is replaced: said), never a file of another kind (a Middlebury calib.txt was
    overwritten with YAML, unsaid). -> the word for the final line: 'wrote' or 'replaced'."""
    from pathlib import Path

    from app.engine.calibration.files import is_rig_file
    from app.engine.errors import UserError
    from app.engine.fileio import check_can_write

    out = Path(path)
    folder = out.parent
    if not folder.is_dir():
        raise UserError(f"--out {out}: the folder {folder} does not exist; create it or choose another")
    if out.is_dir():
        raise UserError(f"--out {out} is a folder; give a file name ending .yaml, .yml or .xml")
    # a read-only folder was found only after the whole calibration ran (review)
    check_can_write(out)
    if not out.exists():
        return "wrote"
    if not is_rig_file(out):
        raise UserError(
            f"--out {out} exists and is not a stereo calibration (OpenCV YAML or XML): it is left as it "
            "is; choose another file name"
        )
    return "replaced the earlier calibration in"


def _write_rig(path: str, rig: Any, baseline_known: bool, wrote: str, focal_guessed: bool = False) -> str:
    """Write the rig; a calibration already there is kept beside it as ``.bak`` first (a 13-view
    board calibration was replaced by a hand-held self-rectification of another camera, unasked),
    or ``.1.bak``, ``.2.bak``, ... when earlier backups are there.
    -> the line that says what was written."""
    import shutil
    from pathlib import Path

    from app.engine.calibration.files import write_opencv_yaml
    from app.engine.errors import UserError

    out = Path(path)
    kept = ""
    if out.is_file():
        # never over an earlier backup: two bad runs in a row lost the good calibration (review)
        backup = out.with_name(out.name + ".bak")
        number = 1
        while backup.exists():
            backup = out.with_name(f"{out.name}.{number}.bak")
            number += 1
        try:
            shutil.copy2(out, backup)
        except OSError as exc:
            raise UserError(
                f"could not keep the earlier calibration as {backup} ({exc.strerror}); nothing was "
                "written: choose another --out"
            ) from None
        kept = f" (the earlier one kept as {backup})"
    write_opencv_yaml(out, rig, baseline_known, focal_guessed)
    return f"{wrote} {out}{kept}"


def _calibrate(args: argparse.Namespace, target: Any) -> int:
    from app.engine.calibration.folder import calibrate_folder
    from app.engine.errors import UserError

    square = getattr(target, "square_m", None)
    if square is not None and square >= SQUARE_NOTE_M:  # a typing slip: refused before the work
        raise UserError(
            f"--square is in metres: {square:g} m squares are larger than any board's; "
            f"{square:g} cm is --square {square / 100:g}, {square:g} mm is --square {square / 1000:g}"
        )
    wrote = _check_out(args.out)

    def progress(name: str, missing: str | None) -> None:
        print(f"{name}: {'board found' if missing is None else missing + ', skipped'}")

    drop = [n for item in args.drop for n in item.split(",") if n]
    result = calibrate_folder(args.folder, target, progress, drop, args.drop_outliers)
    print("per-view rms reprojection error (left, right):")
    for name, (el, er) in zip(result.views, result.view_errors_px, strict=True):
        flag = "  <- outlier (--drop " + name + ")" if name in result.outliers else ""
        print(f"  {name}: {el:.3f} px, {er:.3f} px{flag}")
    print(f"views: {len(result.views)} used, {len(result.skipped)} skipped, {len(result.dropped)} dropped")
    if result.dropped:
        print(f"dropped: {', '.join(result.dropped)}")
    if result.outliers:
        how = (
            "still, after one round of --drop-outliers; leave them out with "
            + " ".join(f"--drop {name}" for name in result.outliers)
            if args.drop_outliers
            else "drop them with --drop-outliers"
        )
        print(f"outlier views: {', '.join(result.outliers)} ({how})")
        cols, rows = getattr(target, "inner", (0, 0))
        if cols != rows and len(result.outliers) >= max(2, 0.2 * len(result.views)):
            # OpenCV finds a board counted the other way round too, but some views then pair
            # corners mirrored: several outliers (OpenCV's sample at 6x9: 3 of 13, rms x 2)
            print(
                f"note: {len(result.outliers)} of {len(result.views)} views are outliers; if the board "
                f"has {cols} inner corners down and {rows} across, give --pattern {rows}x{cols}"
            )
    print(f"rms reprojection error: {result.rms_px:.3f} px")
    print(f"epipolar error: {result.epipolar_rms_px:.3f} px")
    print(f"baseline: {result.baseline_m:.4f} m")
    rig = result.rig
    print(
        f"focal length: left {rig.K1[0, 0]:.1f} px, right {rig.K2[0, 0]:.1f} px "
        f"(rectified {rig.rectified().focal_px:.1f} px)"
    )  # the window said it, the command did not (review)
    print(f"coverage: {result.coverage} (1 = the views span the whole range{result.coverage.advice()})")
    for note in result.notes:
        print(f"note: {note}")
    worst = max(result.rms_px, result.epipolar_rms_px)
    if worst > USABLE_RMS_PX and not args.force:
        remedy = (
            "check the board size and that the cameras were fixed to each other and captured at the "
            "same instant (every view off alike means they were not)"
            if not result.outliers
            else f"leave out the outlier views (--drop {result.outliers[0]} ...)"
            if args.drop_outliers
            else "drop the outlier views (--drop-outliers)"
        )
        raise UserError(
            f"not written: the fit is off by {worst:.2f} px (a usable calibration is under "
            f"{USABLE_RMS_PX:g} px); {remedy}, or give --force to write it anyway"
        )
    print(_write_rig(args.out, result.rig, True, wrote))
    return 0


def run_rectify(args: argparse.Namespace) -> int:
    import itertools
    from pathlib import Path

    from app.engine.calibration.check import check_epipolar
    from app.engine.calibration.files import load_for_frames
    from app.engine.calibration.rig import Rectifier
    from app.engine.calibration.selfrect import rectify_frames
    from app.engine.errors import UserError
    from app.engine.formats import read_pair_rgb
    from app.engine.sources.spec import open_source
    from app.vocabulary import cli_words

    if args.frames < 1:
        raise UserError(f"--frames must be at least 1, got {args.frames}")
    wrote = _check_out(args.out)
    if args.right is not None:
        pairs = [read_pair_rgb(args.source, args.right)]
    else:
        with open_source(args.source) as source:
            pairs = [(f.left, f.right) for f in itertools.islice(source, args.frames)]
    if not pairs:
        raise UserError(f"{args.source} gave no frames; check the source")
    known = None
    if args.calib:
        _, known, note = load_for_frames(
            args.calib, args.calib2, (pairs[0][0].shape[1], pairs[0][0].shape[0])
        )
        if note:
            print(f"note: {note}")
        if known is None:
            raise UserError(
                f"{args.calib} describes a rectified pair, not a raw rig; self-rectify without --calib"
            )
    given = None
    if known is not None:  # what 'calib check --calib' finds of it, on the first frame
        given = check_epipolar(*Rectifier(known).rectify(*pairs[0]), args.detector)
        if given.verdict == "rectified" and args.baseline is None:  # as the window leaves it alone
            print(
                f"{args.calib} rectifies these frames already (the check of the first frame: vertical RMS "
                f"{given.vertical_rms_px:.2f} px over {given.matches} matches): kept as it is"
            )
            same = Path(args.out).resolve() == Path(args.calib).resolve()
            print(
                f"{args.out} is {args.calib}: nothing written"
                if same
                else _write_rig(args.out, known, True, wrote)
            )
            return 0
    result = rectify_frames(pairs, known, args.baseline, args.detector)
    how = {
        "pose": f"intrinsics of {args.calib}, relative pose re-estimated",
        "rows": "the right view's rows moved onto the left's (shift, roll, scale; no intrinsics known)",
    }.get(result.method, "projective (no intrinsics known)")
    print(f"frames: {result.frames}, matches: {result.matches} ({args.detector})")
    print(f"method: {how}")
    # "before" of a rig kept is measured on the frames it rectifies, as 'calib check --calib' does
    before = f"with {args.calib}'s rectification" if result.method == "pose" else "on the raw frames"
    # the fit's own matches, then the check's (its figures read beside these as a contradiction)
    print(
        f"vertical rms of the fit's matches: {result.before_rms_px:.3f} px {before}, "
        f"{result.after_rms_px:.3f} px after"
    )
    check = check_epipolar(*Rectifier(result.rig).rectify(*pairs[0]), args.detector)
    if given is not None:  # its own matches can fit better while the rig is worse (review)
        if given.vertical_rms_px < check.vertical_rms_px:  # NaN (no figure) compares False
            raise UserError(
                f"the re-estimated rig lines up the first frame worse (vertical RMS "
                f"{check.vertical_rms_px:.2f} px) than {args.calib} ({given.vertical_rms_px:.2f} px): "
                f"nothing written, keep {args.calib}; or give more frames of a textured, static scene"
            )
        print(
            f"check of the first frame with {args.calib}: {given.verdict} "
            f"(vertical RMS {given.vertical_rms_px:.2f} px)"
        )
    print(f"check of the first rectified frame: {check.verdict} ({check.reason_in(cli_words)})")
    if not result.baseline_known:
        print("baseline: unknown, saved as 1 m: depths are in baselines; give --baseline METRES for metres")
    if result.method != "pose":  # metres from this rig are only as right as this guess
        focal = float(result.rig.K1[0, 0])
        print(
            f"note: focal length unknown, assumed {focal:g} px (the image's larger side): depths in metres "
            "scale with it; 'calib chessboard' measures it"
        )
    print(_write_rig(args.out, result.rig, result.baseline_known, wrote, result.method != "pose"))
    return 0


CALIBRATION_SUFFIXES = (".yaml", ".yml", ".xml", ".txt")  # .txt: YAML inside, read back as such


def _calibration_file(text: str) -> str:
    """--out: a name OpenCV writes as YAML or XML (a .json was written as YAML, which every
    reader then refused as JSON)."""
    from pathlib import Path

    if Path(text).suffix.lower() not in CALIBRATION_SUFFIXES:
        raise argparse.ArgumentTypeError(
            f"{text}: a calibration is written as OpenCV YAML or XML; name it .yaml, .yml or .xml "
            "(or .txt, which holds YAML)"
        )
    return text


def _calibrate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out", required=True, type=_calibration_file, help="output calibration (.yaml/.yml, or .xml)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help=f"write the calibration even when its reprojection or epipolar rms is over {USABLE_RMS_PX:g} px",
    )
    p.add_argument(
        "--drop", action="append", default=[], metavar="VIEW", help="leave out this view (left image name)"
    )
    p.add_argument(
        "--drop-outliers", action="store_true", help="fit again without the views flagged as outliers"
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calib",
        help="check a pair's rectification, calibrate a rig from board views, or self-rectify it",
        description=(
            "Stereo calibration tools: 'check' measures a pair, 'chessboard' and 'charuco' calibrate "
            "from board views, 'rectify' self-rectifies from ordinary frames."
        ),
    )
    tools = p.add_subparsers(dest="calib_command", required=True)

    c = tools.add_parser(
        "check",
        help="how well is a pair rectified?",
        description=(
            "Match features over the whole pair (ratio test, RANSAC fundamental matrix) and report the "
            "vertical offsets of the inliers, and the shift, roll and vertical scale between the views: "
            "rectified <= 0.6 px RMS, marginal <= 1 px, else not rectified (exit status 1); unknown "
            f"when the scene lacks texture (exit status {UNCHECKED_EXIT}). With --calib of a raw rig the "
            "pair is rectified first. "
            "With a chessboard in view (--pattern) also the epipolar RMS over its corners and, given "
            "--square and --calib, the measured square size against the true one."
        ),
    )
    c.add_argument("left")
    c.add_argument("right")
    c.add_argument(
        "--calib",
        help="calibration: OpenCV YAML/XML, ROS camera_info (left), Middlebury calib.txt or stereodemo JSON",
    )
    c.add_argument("--calib2", help="right camera_info of a ROS pair, or extrinsics.yml for intrinsics.yml")
    c.add_argument("--pattern", type=parse_pattern, help="chessboard inner corners COLSxROWS, e.g. 9x6")
    c.add_argument(
        "--square", type=positive_metres, help="chessboard square size in metres (with --calib: size check)"
    )
    c.add_argument("--detector", default="orb", choices=["orb", "sift"])
    c.add_argument(
        "--max-features",
        type=whole("--max-features", 50, 100_000),
        default=3000,
        help="features per image (default 3000; 50 to 100000)",
    )
    c.add_argument("--json", type=report_file("calib check"), help="also write the figures to this JSON file")
    c.set_defaults(func=run_check)

    b = tools.add_parser(
        "chessboard",
        help="calibrate a stereo rig from a folder of chessboard pairs",
        description=(
            "Calibrate from image pairs in FOLDER (files named *left*/*right*, or left/ and right/ "
            "subfolders): per-camera calibration, stereo calibration with intrinsics fixed, "
            "rectification. Prints RMS and epipolar error, baseline and coverage; writes OpenCV YAML."
        ),
    )
    b.add_argument("folder")
    b.add_argument("--pattern", type=parse_pattern, required=True, help="inner corners COLSxROWS, e.g. 9x6")
    b.add_argument("--square", type=positive_metres, required=True, help="square size in metres")
    _calibrate_options(b)
    b.set_defaults(func=run_chessboard)

    a = tools.add_parser(
        "charuco",
        help="calibrate a stereo rig from a folder of ChArUco board pairs",
        description=(
            "As 'chessboard', with a ChArUco board: its corners carry ids, so a board seen in part "
            "or at any orientation still pairs up. Give the board by its squares (e.g. 7x5)."
        ),
    )
    a.add_argument("folder")
    a.add_argument("--squares", type=parse_pattern, required=True, help="squares COLSxROWS, e.g. 7x5")
    a.add_argument("--square", type=positive_metres, required=True, help="square size in metres")
    a.add_argument("--marker", type=positive_metres, required=True, help="marker size in metres")
    a.add_argument("--dictionary", default="4X4_50", help="ArUco dictionary (default 4X4_50)")
    a.add_argument("--legacy", action="store_true", help="board made before OpenCV 4.6 (even rows)")
    _calibrate_options(a)
    a.set_defaults(func=run_charuco)

    r = tools.add_parser(
        "rectify",
        help="self-rectify a rig from its frames, without a target",
        description=(
            "Estimate a rectification from feature matches over frames of SOURCE (a folder of pairs, "
            "LEFT,RIGHT, a video, a camera), or of one pair LEFT RIGHT: with --calib (a raw rig whose "
            "calibration drifted) its intrinsics are kept and the relative pose re-estimated; without, "
            "the rectification is projective. Prints the vertical error before and after and writes "
            "OpenCV YAML that --calib and the window read."
        ),
    )
    r.add_argument("source", help="source, or the left image of one pair")
    r.add_argument("right", nargs="?", help="right image, when SOURCE is a left image")
    r.add_argument(
        "--out", required=True, type=_calibration_file, help="output calibration (.yaml/.yml, or .xml)"
    )
    r.add_argument("--calib", help="a raw rig's calibration whose intrinsics to keep")
    r.add_argument("--calib2", help="right camera_info of a ROS pair, or extrinsics.yml")
    r.add_argument("--baseline", type=baseline_metres, help="baseline in metres (default: the rig's, else 1)")
    r.add_argument("--frames", type=int, default=10, help="frames to pool matches over (default 10)")
    r.add_argument("--detector", default="orb", choices=["orb", "sift"])
    r.set_defaults(func=run_rectify)
