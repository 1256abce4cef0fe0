"""Names a package exports but imports only on first use (PEP 562).

A package lists each such name with its home, and gets the module-level ``__getattr__``
and ``__dir__`` that import it when it is first read, so that importing the package stays
light (``import tiap`` loads none of the stages)::

    __getattr__, __dir__ = lazy_exports(__name__, {"rescore": "tiap.scoring.rescore"})

A home is a module (the name is the same there) or a ``(module, name)`` pair.

    >>> import types, sys
    >>> pkg = types.ModuleType("pkg")
    >>> sys.modules["pkg"] = pkg
    >>> pkg.__getattr__, pkg.__dir__ = lazy_exports("pkg", {"dedent": "textwrap",
    ...                                                     "join": ("os.path", "join")})
    >>> pkg.dedent("  x"), pkg.join("a", "b"), "dedent" in dir(pkg)
    ('x', 'a/b', True)
    >>> pkg.nothing
    Traceback (most recent call last):
    AttributeError: module 'pkg' has no attribute 'nothing'
    >>> del sys.modules["pkg"]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, homes: Mapping[str, str | tuple[str, str]],
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the module ``package``: each name of ``homes`` is
    imported from its home on first use, then kept as a plain attribute."""
    module = sys.modules[package]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        where, attr = (home, name) if isinstance(home, str) else home
        value = getattr(import_module(where), attr)
        setattr(module, name, value)  # the next lookup is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *homes})

    return __getattr__, __dir__
