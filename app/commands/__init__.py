"""Subcommands of ``bi3d-studio``: each module has ``register(subparsers)`` and ``run(args)``."""

from app.commands import bench, calib, depth, evaluate, flow, gui, record, train

COMMANDS = (depth, evaluate, bench, flow, calib, record, train, gui)
