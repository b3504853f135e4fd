"""Subcommands of ``bi3d-studio``: each module has ``register(subparsers)`` and ``run(args)``."""

from app.commands import (
    adapt,
    bench,
    calib,
    depth,
    evaluate,
    export,
    flow,
    gui,
    record,
    train,
    train_pixel_pass,
)

COMMANDS = (depth, evaluate, bench, export, flow, calib, record, train, train_pixel_pass, adapt, gui)
