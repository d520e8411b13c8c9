"""The one error of ``ormbench publish``: bad input or a setup that cannot work."""

from __future__ import annotations


class PublishError(Exception):
    """Bad input or a setup that cannot work: one line, exit status 2."""
