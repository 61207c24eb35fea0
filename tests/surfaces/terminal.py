"""The ``kairos`` command in a real terminal: a pseudo-terminal of a given size, so the
command sees a tty on stdout (and stdin) and reads its width from the window, as in a
person's shell."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path

KAIROS = str(Path(sys.executable).parent / "kairos")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
WAIT = 60.0  # seconds a command may take before the test fails


@dataclass
class Screen:
    code: int
    text: str  # everything written to the terminal (stdout and stderr), without colours

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


def in_terminal(env: dict[str, str], *args: str, columns: int = 80,
                answers: str = "") -> Screen:
    """Run ``kairos *args`` on a pty ``columns`` wide; ``answers`` is typed on its stdin
    (then end-of-input, as Ctrl-D does)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # "\n" as written, not "\r\n"
    attrs[3] &= ~termios.ECHO  # the answers are not echoed back into the output
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    proc = subprocess.Popen([KAIROS, *args], env=env, stdin=slave, stdout=slave,
                            stderr=slave, close_fds=True, start_new_session=True)
    os.close(slave)
    if answers:
        os.write(master, answers.encode())
    os.write(master, bytes([attrs[6][termios.VEOF][0]]))  # end of input
    chunks: list[bytes] = []
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], deadline - time.monotonic())
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the command exited and closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait(timeout=max(deadline - time.monotonic(), 1))
    return Screen(code, ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")))
