"""The results store (SQLite by default), with a versioned schema."""

from gpuscout.store.db import RunRow, Store, default_target

__all__ = ["RunRow", "Store", "default_target"]
