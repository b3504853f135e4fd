"""Misalignment figures as words."""

from __future__ import annotations

from app.engine.epipolar import Misalignment


def test_figures_that_round_to_zero_read_without_a_sign_of_their_own() -> None:
    """ "scale -0.00 %" read as a measured loss under a rectified verdict (review)."""
    words = str(Misalignment(-0.001, -0.0001, -0.004))
    assert words == "shift +0.00 px at the centre, roll +0.000 deg, scale +0.00 %"
    words = str(Misalignment(-1.234, 0.5, 2.0))
    assert words == "shift -1.23 px at the centre, roll +0.500 deg, scale +2.00 %"
