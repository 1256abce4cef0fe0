"""Memory: stores with lineage (``items.jsonl``).

>>> from tiap.datasets import load                                   # doctest: +SKIP
>>> from tiap.memory import build_store, make_parser                 # doctest: +SKIP
>>> parser = make_parser("heuristic", max_facts=5)                   # doctest: +SKIP
>>> build_store(load("locomo"), parser, "stores/locomo-d5")          # doctest: +SKIP

:func:`build_dataset_store` is the whole ``tiap build-store`` step from a dataset id and a
parser name (options checked together, a local model served for the ``llm`` parser):

>>> from tiap.memory import build_dataset_store                      # doctest: +SKIP
>>> build_dataset_store("locomo", "heuristic", "stores/f5", max_facts=5)  # doctest: +SKIP

Parsers are registered factories (:mod:`tiap.memory.parsers`): ``heuristic``
(:mod:`tiap.memory.heuristic`), ``native`` (:mod:`tiap.memory.native`) and ``llm``
(:mod:`tiap.memory.llm_parser`, needs the ``llm`` extra).
"""

from tiap.memory.build import BuildResult, build_dataset_store, build_store
from tiap.memory.parsers import (
    Parser,
    ParserSpec,
    TurnContext,
    make_parser,
    parser_names,
    register_parser,
    turn_contexts,
)
from tiap.memory.store import Item, iter_items, read_items, write_items

__all__ = [
    "BuildResult", "Item", "Parser", "ParserSpec", "TurnContext", "build_dataset_store",
    "build_store", "iter_items", "make_parser", "parser_names", "read_items", "register_parser",
    "turn_contexts", "write_items",
]
