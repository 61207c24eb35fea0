"""Questions asked at the terminal while a person walks a run.

Prompts go to stderr and answers come from stdin, one line each. The end of the input (a
closed pipe, ``</dev/null``) is ``NoInput``, told apart from Ctrl-C (``KeyboardInterrupt``):
the first means nobody is there to answer, the second that the person stopped. An empty
answer takes the default when the question has one; a yes/no question without a default
(one whose "no" ends the run) asks again until it gets y or n.
"""

from __future__ import annotations

import sys

YES = ("y", "yes")
NO = ("n", "no")


class NoInput(Exception):
    """stdin ended before the question was answered."""


def _line(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    text = sys.stdin.readline()
    if not text:
        sys.stderr.write("\n")
        raise NoInput(prompt.strip())
    return text.rstrip("\n")


def confirm(question: str, default: bool | None) -> bool:
    """y or n; Enter takes ``default``, or asks again when there is none."""
    hint = {None: "y/n", True: "Y/n", False: "y/N"}[default]
    while True:
        answer = _line(f"{question} [{hint}]: ").strip().lower()
        if answer in YES:
            return True
        if answer in NO:
            return False
        if not answer and default is not None:
            return default
        sys.stderr.write("Answer y or n.\n")


def number(question: str, default: int) -> int:
    """An integer; Enter takes ``default``."""
    while True:
        answer = _line(f"{question} [{default}]: ").strip()
        if not answer:
            return default
        try:
            return int(answer)
        except ValueError:
            sys.stderr.write("Answer with a whole number.\n")


def text(question: str) -> str:
    """A line of text that is not blank."""
    while True:
        answer = _line(f"{question}: ").strip()
        if answer:
            return answer
        sys.stderr.write("Type your answer on one line.\n")


__all__ = ["NoInput", "confirm", "number", "text"]
