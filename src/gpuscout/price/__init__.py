"""The cost of a training run: time, money, energy, failures and delay, every assumption
visible. Pure arithmetic over the catalog and the predictor; no TensorFlow."""

from gpuscout.price.cost import (
    Assumptions,
    CostLine,
    Option,
    UnpricedLine,
    cost_all,
    cost_options,
)

__all__ = ["Assumptions", "CostLine", "Option", "UnpricedLine", "cost_all", "cost_options"]
