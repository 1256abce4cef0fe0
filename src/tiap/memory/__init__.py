"""Stage 2: memory stores with lineage (``items.jsonl``)."""

from tiap.memory.store import Item, read_items, write_items

__all__ = ["Item", "read_items", "write_items"]
