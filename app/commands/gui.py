"""`bi3d-studio gui`: the desktop application, optionally photographing itself."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping

from app.commands.arguments import real
from app.engine.errors import UserError


def run(args: argparse.Namespace) -> int:
    from app.ui.app import run_gui

    if args.calib2 and not args.calib:
        raise UserError("--calib2 is the second file of a calibration: give --calib too")
    check_display()
    if args.calib:  # refused here, in one line, before a window opens
        from app.engine.calibration.files import load_calibration

        load_calibration(args.calib, args.calib2)
    return run_gui(args.source, args.screenshot, args.quit_after, args.calib, args.calib2)


def check_display(environ: Mapping[str, str] | None = None, platform: str | None = None) -> None:
    """A ``UserError`` on Linux without a display to open the window on: Qt aborted with a
    paragraph about xcb plugins and exit status 134 (review)."""
    env = os.environ if environ is None else environ
    system = sys.platform if platform is None else platform
    if not system.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return
    if not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        raise UserError(
            "no display to open the window on (neither DISPLAY nor WAYLAND_DISPLAY is set): run it in "
            "a desktop session, over ssh -X, or with QT_QPA_PLATFORM=offscreen and --screenshot FILE"
        )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gui",
        help="the desktop application",
        description=(
            "Open the desktop application on SOURCE (default: the bundled demo pair). SOURCE is a "
            "folder, a video, 'LEFT,RIGHT' images, 'camera:0,1', 'camera:0' (side by side) or "
            "'synthetic'. --screenshot FILE saves the window once the first depth is shown and "
            "closes it; --quit-after SECONDS closes the window after that long (with --screenshot: the "
            "longest wait for the shot)."
        ),
    )
    p.add_argument("source", nargs="?", help="what to open (default: the bundled demo pair)")
    p.add_argument(
        "--calib",
        help="the rig's calibration, loaded into the calibration panel (as its Load... does): "
        "OpenCV YAML/XML, a Kalibr camchain, Middlebury calib.txt, stereodemo JSON or a left ROS "
        "camera_info (its right one found beside it, or given with --calib2)",
    )
    p.add_argument("--calib2", help="the right camera's ROS camera_info, or OpenCV's extrinsics.yml")
    p.add_argument("--screenshot", help="save a PNG of the window once depth is shown")
    p.add_argument(
        "--quit-after",
        type=real("--quit-after", 0, None, "s", low_open=True),
        help="close after this many seconds (with --screenshot: the longest wait for depth)",
    )
    p.set_defaults(func=run)
