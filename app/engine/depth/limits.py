"""What an engine can answer: the smallest image, and the memory a request will take.

Both are checked before any work starts, so that a 1 x 1 pair is refused instead of being
answered from padding, and an 8000 x 6000 pair is refused with the figure instead of
failing in the middle of an allocation.
"""

from __future__ import annotations

from app.engine.errors import UserError
from app.engine.memory import gib, require

# Bi3D's features are at 1/3 resolution: 16 px are 5 feature cells, the fewest in which the
# network sees image rather than the zero padding that brings it up to its input size (96 or
# 192 px); SGBM's smallest block matching window also needs a few pixels of context around it.
MIN_IMAGE_SIDE = 16
FLOAT32 = 4
ADVICE = "use smaller images (downscale the pair), fewer planes or levels, or a narrower range"


def check_image_size(height: int, width: int, why: str = "below that Bi3D would see mostly padding") -> None:
    """Refuse images smaller than MIN_IMAGE_SIDE on either side."""
    if height < MIN_IMAGE_SIDE or width < MIN_IMAGE_SIDE:
        raise UserError(
            f"the images are {width}x{height} px; this needs at least {MIN_IMAGE_SIDE}x{MIN_IMAGE_SIDE} px "
            f"({why}); give a larger pair"
        )


def bi3d_bytes(padded: tuple[int, int], planes: int, feature_channels: int) -> float:
    """Peak bytes of one Bi3D frame: P full-resolution logits, their sigmoid and the cropped
    copy (3 x P x H' x W' float32), plus the features of both views at 1/3 resolution."""
    h, w = padded
    per_plane = 3 * FLOAT32 * h * w
    features = 2 * FLOAT32 * feature_channels * (h // 3) * (w // 3)
    return planes * per_plane + features


def sgbm_bytes(size: tuple[int, int], search: int, planes: int, full_dp: bool) -> float:
    """Peak bytes of one SGBM frame: OpenCV's cost buffers (the full H x W x D int16 volume,
    twice, for the full two-pass modes), the images and the P x H x W plane probabilities with
    their temporaries (float32 + bool + float32)."""
    h, w = size
    volume = 2 * 2 * h * w * search if full_dp else 2 * 2 * 8 * w * search
    images = 16 * h * w
    return volume + images + planes * h * w * (FLOAT32 + 1 + FLOAT32)


def require_frame(
    needed: float, planes: int, size: tuple[int, int], engine: str, padded: bool = False
) -> None:
    """``size`` (height, width); ``padded``: the network's padded frame, said so (a --size 8000x6000
    read "Bi3D on a 6048x8064 pair", width first and padded, unsaid)."""
    h, w = size
    frame = f"a {w} x {h} px frame (width x height{', padded for the network' if padded else ''})"
    require(needed, f"{engine} on {frame} with {planes} planes", ADVICE)


__all__ = ["MIN_IMAGE_SIDE", "bi3d_bytes", "check_image_size", "gib", "require_frame", "sgbm_bytes"]
