"""The results store (SQLite by default), with a versioned schema."""

from gpuscout.store.db import Store
from gpuscout.store.engines import database_exists, default_target
from gpuscout.store.rows import RunRow

__all__ = ["RunRow", "Store", "database_exists", "default_target"]
