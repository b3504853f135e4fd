"""`bi3d-studio calib`: check a pair's rectification, or calibrate a rig from chessboard views."""

from __future__ import annotations

import argparse
import json
from typing import Any


def parse_pattern(text: str) -> tuple[int, int]:
    """'9x6' -> (9, 6): inner corners per row (cols) x per column (rows)."""
    try:
        cols, rows = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"pattern must be COLSxROWS inner corners, e.g. 9x6, got {text!r}"
        ) from None
    if cols < 2 or rows < 2:
        raise argparse.ArgumentTypeError(f"a chessboard needs at least 2x2 inner corners, got {text!r}")
    return cols, rows


def positive_metres(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"square size must be a positive number of metres, got {text!r}")
    return value


def run_check(args: argparse.Namespace) -> int:
    from app.engine.calibration.check import check_board, check_epipolar
    from app.engine.calibration.files import load_calibration
    from app.engine.calibration.rig import Rectifier
    from app.engine.depth.limits import check_image_size
    from app.engine.errors import UserError
    from app.engine.formats import atomic_write, read_image_rgb
    from app.engine.types import check_pair

    if (args.pattern is None) != (args.square is None):
        raise UserError("--pattern and --square go together: give both (e.g. --pattern 9x6 --square 0.025)")
    left, right = read_image_rgb(args.left), read_image_rgb(args.right)
    check_pair(left, right)
    check_image_size(left.shape[0], left.shape[1], "feature matching needs room around each feature")
    calibration = None
    if args.calib:
        size = (left.shape[1], left.shape[0])  # only used when the file does not record its size
        calibration, rig = load_calibration(args.calib, args.calib2, image_size=size)
        if rig is not None:
            left, right = Rectifier(rig).rectify(left, right)
            print(f"rectified with {args.calib} (raw rig, {rig.image_size[0]}x{rig.image_size[1]})")
    report = check_epipolar(left, right, args.detector, args.max_features)
    figures: dict[str, Any] = report.summary()
    print(f"matches: {report.matches} ({args.detector})")
    if report.verdict != "unknown":
        print(
            f"vertical offset: mean {report.vertical_mean_px:+.3f} px, rms {report.vertical_rms_px:.3f} px, "
            f"p95 {report.vertical_p95_px:.3f} px"
        )
    print(f"verdict: {report.verdict} ({report.reason})")
    if args.pattern:
        board = check_board(left, right, args.pattern, args.square, calibration)
        figures.update(
            epipolar_rms_px=round(board.epipolar_rms_px, 4),
            square_m=board.square_m,
            square_measured_m=board.square_measured_m,
            square_error_percent=board.square_error_percent,
        )
        print(f"chessboard: epipolar rms {board.epipolar_rms_px:.3f} px over {board.corners} corners")
        if board.square_measured_m is not None and board.square_error_percent is not None:
            measured, given = board.square_measured_m * 1000, board.square_m * 1000
            print(
                f"square size: {measured:.2f} mm measured, {given:.2f} mm given "
                f"({board.square_error_percent:+.2f} %)"
            )
        else:
            print("square size: not checked (give --calib for focal length and baseline)")
    if args.json:
        atomic_write(args.json, (json.dumps(figures, indent=2) + "\n").encode())
        print(f"wrote {args.json}")
    return 1 if report.verdict == "bad" else 0  # scripts can gate on a rig gone out of calibration


def run_chessboard(args: argparse.Namespace) -> int:
    from app.engine.calibration.chessboard import calibrate_folder
    from app.engine.calibration.files import write_opencv_yaml

    def progress(name: str, found: bool) -> None:
        print(f"{name}: {'board found' if found else 'no board in both images, skipped'}")

    result = calibrate_folder(args.folder, args.pattern, args.square, on_view=progress)
    write_opencv_yaml(args.out, result.rig)
    print(f"views: {len(result.views)} used, {len(result.skipped)} skipped")
    print(f"rms reprojection error: {result.rms_px:.3f} px")
    print(f"epipolar error: {result.epipolar_rms_px:.3f} px")
    print(f"baseline: {result.baseline_m:.4f} m")
    print(f"coverage: {result.coverage}")
    print(f"wrote {args.out}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calib",
        help="check a pair's rectification or calibrate a rig from chessboard views",
        description="Stereo calibration tools: 'check' measures a pair, 'chessboard' calibrates.",
    )
    tools = p.add_subparsers(dest="calib_command", required=True)

    c = tools.add_parser(
        "check",
        help="how well is a pair rectified?",
        description=(
            "Match features across a pair and report the vertical offsets of the matches (good <= "
            "0.6 px RMS, marginal <= 1 px; exit status 1 when bad). With --calib of a raw rig the "
            "pair is rectified first. "
            "With a chessboard in view (--pattern, --square) also the epipolar RMS over its corners "
            "and, given --calib, the measured square size against the true one."
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
    c.add_argument("--square", type=positive_metres, help="chessboard square size in metres")
    c.add_argument("--detector", default="orb", choices=["orb", "sift"])
    c.add_argument("--max-features", type=int, default=3000, help="features per image (default 3000)")
    c.add_argument("--json", help="also write the figures to this JSON file")
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
    b.add_argument("--out", required=True, help="output calibration (.yaml/.yml, or .xml)")
    b.set_defaults(func=run_chessboard)
