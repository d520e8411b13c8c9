"""What a server problem says: one line a user can read, never a password."""

from __future__ import annotations

import re
from typing import Mapping
from urllib.parse import urlsplit, urlunsplit



def one_line(text: str) -> str:
    """Collapse a message (drivers' errors span lines) into one line."""
    return " ".join(str(text).split())


class ServerUnavailable(Exception):
    """Why there is no server, as one line that can be shown without a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


def redact(url: str) -> str:
    """The URL without its password (in the authority or in a password= query parameter)."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            auth, _, hostport = netloc.rpartition("@")
            if ":" in auth:
                auth = auth.split(":", 1)[0] + ":***"
            netloc = f"{auth}@{hostport}"
        query = re.sub(r"(^|&)(password=)[^&]*", r"\1\2***", parts.query)
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def scrub(message: str, url: str) -> str:
    """A driver message without the URL's password, should the driver echo it."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    return message.replace(password, "***") if password else message


def check_settings(settings: Mapping[str, str] | None, engine: str, reserved: frozenset[str]) -> dict[str, str]:
    """The caller's server settings as strings, refused (one line) when they cannot go into a config file safely."""
    out: dict[str, str] = {}
    for key, value in dict(settings or {}).items():
        key, value = str(key), str(value)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key):
            raise ServerUnavailable(f"invalid {engine} setting name {key!r}")
        if key.lower().replace("-", "_") in reserved:
            raise ServerUnavailable(f"the {engine} setting {key} is set by pytest-ormbench and cannot be changed")
        if any(c in value for c in "\n\r\0"):
            raise ServerUnavailable(f"invalid value for {engine} setting {key}: {value!r}")
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------------------------------
# the parent side
