"""The checked writes of a space take turns (``Store.serial``): a method so decorated runs
while it holds the turn of its ``caller``'s space. What is costly and needs no turn
(embedding a new record) is done before such a method is called."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
GUARD_ATTEMPTS = 20
"""How many times a checked write checks again when the write guard (``search.duplicates``)
finds that another checked write came between its check and its write."""


def in_turn(method: F) -> F:
    signature = inspect.signature(method)

    @functools.wraps(method)
    def held(self: Any, *args: Any, **kwargs: Any) -> Any:
        caller = signature.bind(self, *args, **kwargs).arguments["caller"]
        with self.store.serial(caller.space):
            return method(self, *args, **kwargs)

    return held  # type: ignore[return-value]


__all__ = ["GUARD_ATTEMPTS", "in_turn"]
