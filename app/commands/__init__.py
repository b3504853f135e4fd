"""Subcommands of ``bi3d-studio``: each module has ``register(subparsers)`` and ``run(args)``."""

from app.commands import bench, depth, evaluate, train

COMMANDS = (depth, evaluate, bench, train)
