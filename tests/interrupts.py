"""What the tests that interrupt a child process share."""

from __future__ import annotations

import signal


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` for a child that a test stops with SIGINT: its SIGINT back to the default action.

    A shell that starts a job in the background without job control (``cmd &`` in a script, ``nohup``)
    starts it with SIGINT ignored, and every process below inherits that; Python then installs no
    KeyboardInterrupt handler, so a Ctrl-C test would hang on a run that never sees the signal. A user at a
    terminal has SIGINT at its default, which is what these tests are about.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
