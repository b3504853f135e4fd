"""The user's vocabulary: one description per setting, worded per front end."""

from __future__ import annotations

import dataclasses
import math

import pytest

from app import vocabulary
from app.cli import build_parser
from app.engine.depth.engines import EngineOptions
from app.engine.depth.sgbm import SGBMParams
from app.engine.errors import UserError, setting
from app.engine.types import Mode


def test_every_user_facing_engine_option_has_one_setting() -> None:
    targets = [s.target for s in vocabulary.ENGINE_SETTINGS]
    assert len(targets) == len(set(targets))
    internal = {"width", "progress", "sgbm"}  # benchmarks only, a callback, and the SGBM group
    fields = {f.name for f in dataclasses.fields(EngineOptions)} - internal
    assert fields == {t for t in targets if not t.startswith("sgbm.")}
    sgbm = {f"sgbm.{f.name}" for f in dataclasses.fields(SGBMParams)}
    assert {t for t in targets if t.startswith("sgbm.")} <= sgbm


def test_the_depth_command_has_a_flag_for_every_engine_setting() -> None:
    parser = build_parser()
    depth = parser._subparsers._group_actions[0].choices["depth"]  # type: ignore[union-attr]
    dests = {a.dest: a for a in depth._actions}
    for s in vocabulary.ENGINE_SETTINGS:
        assert s.name in dests and s.flag in dests[s.name].option_strings


def test_flags_become_engine_options() -> None:
    args = build_parser().parse_args(
        [
            "depth",
            "a.png",
            "b.png",
            "--engine",
            "sgbm",
            "--no-subpixel",
            "--block-size",
            "7",
            "--sgbm-mode",
            "hh",
        ]
    )
    from app.commands.common import engine_options

    options = engine_options(args)
    assert options.engine == "sgbm" and options.subpixel is False and options.plane_check is True
    assert options.sgbm.block_size == 7 and options.sgbm.mode == "hh"
    assert engine_options(build_parser().parse_args(["depth", "a.png", "b.png"])).engine is None


@pytest.mark.parametrize(
    ("value", "says"),
    [(4, "must be odd"), (13, "outside [1, 11] px"), (math.nan, "not a finite number"),
     (math.inf, "not a finite number"), ("x", "not a number")],
)  # fmt: skip
def test_numbers_are_checked_with_their_range(value: object, says: str) -> None:
    block = vocabulary.SETTINGS["block_size"]
    with pytest.raises(UserError) as exc:
        block.check(value)
    cli = exc.value.worded(vocabulary.cli_words)
    assert cli.startswith("--block-size") and says in cli
    assert exc.value.worded(vocabulary.window_words).startswith("the SGBM block control")
    assert block.check("7") == 7 and vocabulary.SETTINGS["budget_ms"].check("250") == 250.0


def test_engine_messages_are_worded_per_front_end() -> None:
    exc = UserError(f"fp16 needs {setting('device', 'cuda')}; or turn off {setting('subpixel')}")
    assert exc.worded(vocabulary.cli_words) == "fp16 needs --device cuda; or turn off --no-subpixel"
    assert exc.worded(vocabulary.window_words) == (
        "fp16 needs Device: cuda; or turn off the Sub-pixel refinement control"
    )
    assert str(exc) == "fp16 needs device cuda; or turn off subpixel"


def test_depth_request_keeps_only_what_the_mode_uses() -> None:
    request = vocabulary.depth_request("binary", planes=(12.0,), levels=9, max_disparity=96)
    assert request.mode is Mode.BINARY and request.planes == (12.0,) and request.levels is None
    quantized = vocabulary.depth_request("quantized", planes=(), levels=9)
    assert quantized.levels == 9
    with pytest.raises(UserError, match="restricts the selective mode only"):
        vocabulary.depth_request("continuous", range_px=(10.0, 40.0))
    with pytest.raises(UserError, match=r"levels 1000 is outside \[1, 191\]; a 192 px range holds"):
        vocabulary.depth_request("quantized", levels=1000)


def test_every_command_prints_its_help(capsys) -> None:  # type: ignore[no-untyped-def]
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        with pytest.raises(SystemExit) as exc:
            parser.parse_args([name, "--help"])
        assert exc.value.code == 0, name
        assert "usage:" in capsys.readouterr().out  # a literal % in a help text breaks argparse


def test_a_command_the_window_has_a_button_for_is_named_as_the_button() -> None:
    """The notes dialog said "check the rig with 'bi3d-studio calib check'" (review)."""
    from app.engine.depth.alignment import Alignment
    from app.engine.epipolar import Misalignment
    from app.vocabulary import word

    note = Alignment(Misalignment(0.0, 1.0, 0.0), 1.0, 100, 0.1).note()  # the engine's own
    assert word(note).endswith("check the rig with the Calibration panel's 'Check the current pair'")


def test_no_message_puts_an_article_or_adjective_before_a_setting_s_name() -> None:
    """The window words a setting as "the Max disparity control": "use Engine: sgbm with a larger
    the Max disparity control" (review). A setting named without a value follows a verb."""
    import re
    from pathlib import Path

    import app

    words = r"\b(a|an|the|larger|smaller|higher|bigger|another)\s+"
    pattern = re.compile(words + r"\{setting\(['\"][a-z_]+['\"]\)\}")
    found = [
        f"{path.name}: {m.group(0)}"
        for path in Path(app.__file__).parent.rglob("*.py")
        for m in pattern.finditer(path.read_text())
    ]
    assert found == []
