"""The ground floor: records, units, errors, ranges and the other leaves every stage may import.

Why a package of their own: fourteen small modules sat beside the stages at the package's top,
where a reader could not tell a stage from a leaf. Here they import only each other (and
``workloads``), never a stage; ``tests/test_layers.py`` checks it. Nothing is imported by this
file: each module is imported by name (``from gpuscout.core.records import RunResult``).
"""
