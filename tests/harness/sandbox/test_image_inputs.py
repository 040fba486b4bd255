"""What shapes the base image is in its tag: the apt-get stage's packages included (npm)."""

from __future__ import annotations

import pytest

from harness.sandbox import images


def test_npm_comes_from_the_apt_get_stage_and_is_part_of_the_images_tag(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "npm" in images.APT_PACKAGES and "npm" not in images.PACKAGES  # debootstrap cannot configure it
    tag = images.image_tag()
    monkeypatch.setattr(images, "APT_PACKAGES", ())
    assert images.image_tag() != tag  # an image without npm never passes for one with it
