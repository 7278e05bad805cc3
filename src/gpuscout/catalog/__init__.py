"""The hardware catalog: GPU specs, prices, published measurements and measured NCCL bus
bandwidths, each row sourced.

Data lives in versioned CSV files (``data/v1``) so it can be reviewed, diffed and overridden
without touching code. Nothing here imports TensorFlow.
"""

from gpuscout.catalog.catalog import Catalog, load_catalog
from gpuscout.catalog.models import FEATURES, Busbw, Gpu, Price, Published
from gpuscout.catalog.names import Resolved
from gpuscout.catalog.rates import peak_tflops

__all__ = [
    "FEATURES",
    "Busbw",
    "Catalog",
    "Gpu",
    "Price",
    "Published",
    "Resolved",
    "load_catalog",
    "peak_tflops",
]
