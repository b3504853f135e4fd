"""Flow pictures: the Middlebury colour coding, its legend, and arrows over a frame."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.flow.draw import (
    color_wheel,
    draw_flow_arrows,
    flow_color_with_legend,
    flow_scale,
    flow_to_color,
)


def field(*vectors: tuple[float, float]) -> np.ndarray:
    return np.array([vectors], dtype=np.float32)


# Colours at full saturation from the Middlebury wheel (Baker et al.): right is red, down
# orange-yellow, left cyan-blue, up violet; written out here as the reference.
@pytest.mark.parametrize(
    ("vector", "rgb"),
    [((1, 0), (255, 0, 0)), ((0, 1), (255, 230, 0)), ((-1, 0), (0, 209, 255)), ((0, -1), (88, 0, 255))],
    ids=["right", "down", "left", "up"],
)
def test_direction_sets_the_hue(vector: tuple[float, float], rgb: tuple[int, int, int]) -> None:
    np.testing.assert_allclose(flow_to_color(field(vector), 1.0)[0, 0], rgb, atol=1)


def test_magnitude_sets_the_saturation_up_to_the_clamp() -> None:
    rgb = flow_to_color(field((0, 0), (2, 0), (4, 0), (40, 0)), max_magnitude=4.0)[0]
    np.testing.assert_array_equal(rgb[0], (255, 255, 255))  # at rest: white
    np.testing.assert_allclose(rgb[1], (255, 128, 128), atol=1)  # half the clamp: half saturated
    np.testing.assert_array_equal(rgb[3], rgb[2])  # beyond the clamp: as at the clamp


def test_unknown_flow_is_black_and_the_scale_ignores_it() -> None:
    flow = field((np.nan, 0), (3, 4), (np.inf, 1))
    rgb = flow_to_color(flow)
    assert flow_scale(flow) == pytest.approx(5.0)
    np.testing.assert_array_equal(rgb[0, [0, 2]], 0)
    np.testing.assert_allclose(rgb[0, 1], flow_to_color(field((3, 4)), 5.0)[0, 0])


def test_legend_wheel_matches_the_coding() -> None:
    wheel = color_wheel(65)
    assert wheel.shape == (65, 65, 3) and wheel.dtype == np.uint8
    np.testing.assert_array_equal(wheel[32, 32], (255, 255, 255))  # centre: no motion
    np.testing.assert_allclose(wheel[32, 62], flow_to_color(field((30, 0)), 32.0)[0, 0], atol=2)
    np.testing.assert_allclose(wheel[2, 32], flow_to_color(field((0, -30)), 32.0)[0, 0], atol=2)


def test_flow_png_is_the_coding_with_a_legend_to_the_right() -> None:
    flow = np.random.default_rng(1).normal(size=(120, 160, 2)).astype(np.float32)
    image = flow_color_with_legend(flow, 2.0)
    assert image.dtype == np.uint8 and image.shape[0] == 120 and image.shape[1] > 160
    np.testing.assert_array_equal(image[:, :160], flow_to_color(flow, 2.0))
    tiny = flow_color_with_legend(flow[:10, :10])
    assert tiny.shape[0] > 10  # the legend keeps its size; the picture is padded below


def _drawn(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    return np.argwhere((after != before).any(axis=2))


def test_arrows_start_on_the_grid_and_point_along_the_flow() -> None:
    image = np.zeros((48, 64, 3), np.uint8)
    flow = np.zeros((48, 64, 2), np.float32)
    flow[..., 0] = 5.0  # everything moves right
    out = draw_flow_arrows(image, flow, step=16, scale=1.0)
    assert out.shape == image.shape and out.dtype == np.uint8 and not image.any()  # input untouched
    drawn = _drawn(image, out)
    first_cell = drawn[(drawn[:, 0] < 16) & (drawn[:, 1] < 16)]
    assert first_cell[:, 1].min() == 8 and first_cell[:, 1].max() in (13, 14)  # x = 8 to 8 + 5
    assert set(drawn[:, 0]) <= set(range(8 - 4, 8 + 5)) | set(range(24 - 4, 24 + 5)) | set(
        range(40 - 4, 40 + 5)
    )
    assert sorted({x // 16 for x in drawn[:, 1]}) == [0, 1, 2, 3]  # one arrow per cell


def test_clamp_limits_arrow_length_and_resting_cells_get_dots() -> None:
    image = np.zeros((32, 32, 3), np.uint8)
    flow = np.zeros((32, 32, 2), np.float32)
    flow[:16, :, 0] = 12.0  # top row of cells moves fast, bottom row rests
    out = draw_flow_arrows(image, flow, step=16, max_magnitude=3.0, scale=1.0)
    drawn = _drawn(image, out)
    top_left = drawn[(drawn[:, 0] < 16) & (drawn[:, 1] < 16)]
    assert top_left[:, 1].max() <= 8 + 3 + 1  # clamped to 3 px (+1 anti-aliasing), not 12
    bottom_left = drawn[(drawn[:, 0] >= 16) & (drawn[:, 1] < 16)]
    assert len(bottom_left) and np.abs(bottom_left - [24, 8]).max() <= 2  # a dot at the cell centre


def test_arrows_skip_unknown_flow_and_accept_gray_frames() -> None:
    gray = np.full((32, 32), 100, np.uint8)
    flow = np.full((32, 32, 2), np.nan, np.float32)
    out = draw_flow_arrows(gray, flow, step=16)
    assert out.shape == (32, 32, 3) and (out == 100).all()


def test_a_few_stray_vectors_do_not_wash_out_the_automatic_scale() -> None:
    """The rim followed the single longest vector: a spot at a frame's edge turned a 4 px field
    pale pink (review). It is the 99th percentile of the lengths, longer ones saturate."""
    flow = np.zeros((100, 100, 2), np.float32)
    flow[..., 0] = 4.0
    flow[0, :5, 0] = 40.0  # 5 stray vectors of 10 000
    assert flow_scale(flow) == pytest.approx(4.0)
    assert flow_scale(field((0, 0), (0, 0), (3, 4))) == pytest.approx(5.0)  # percentile 0: the longest


def test_arrows_keep_a_dark_edge_on_a_scene_of_their_own_colour() -> None:
    """Green arrows were lost on a green scene (review): each is drawn over a dark edge."""
    from app.engine.flow.draw import draw_flow_arrows

    green = np.zeros((64, 64, 3), np.uint8)
    green[..., 1] = 255
    flow = np.zeros((64, 64, 2), np.float32)
    flow[..., 0] = 6.0
    drawn = draw_flow_arrows(green, flow, step=16)
    dark = (drawn.sum(axis=2) < 100).sum()
    assert dark > 4 * 4 * 6  # an edge along every one of the 16 arrows
    assert (drawn[..., 1] == 255).any()  # the arrows themselves are still the colour asked for
