"""A budget of k alarms: the threshold that flags the k highest scores, and how many it flags."""

from __future__ import annotations

from typing import NamedTuple

from jaxmetrics._src.core import batching, checks, coercion, exact_order, kernels, sorting
from jaxmetrics._src.core.options import check_count
from jaxmetrics._src.core.typing import Array, ArrayLike


class BudgetChoice(NamedTuple):
    """The threshold of a budget of k alarms, and how many samples it flags.

    What `budget_threshold` returns; it unpacks as ``value, threshold``. `value` is at least k,
    more when other samples tie with the k-th highest score. Under `jax.jit`, a batch element
    whose scores held NaN or inf has `value` -1 and `threshold` NaN.

    Attributes:
      value: ``[*batch]`` int32, the number of samples with ``score >= threshold``.
      threshold: ``[*batch]`` the k-th highest score, one of the input's own values (a float64
        numpy array for eager float64 input while x64 is off).
    """

    value: Array
    threshold: Array


def budget_threshold(scores: ArrayLike, *, k: int) -> BudgetChoice:
    r"""Threshold of a budget of k alarms: the k-th highest score, and how many samples it flags.

    For a team that can follow up k cases: the threshold is the k-th highest score
    (`.threshold`) and `.value` the number of samples the rule ``score >= threshold`` flags.
    scikit-learn has no equivalent.

    .. math:: t = s_{(k)}, \qquad \mathrm{value} = \#\{i : s_i \ge s_{(k)}\} \ge k

    with s_(k) the k-th largest score.

    The rule ``score >= threshold`` flags every sample tied with the k-th, so `.value` can
    exceed k; break the tie at random or by a second key to call exactly k, or use
    `precision_at_k`, which counts the tied group's expected share. `k` not an int in [1, n]
    raises (`TypeError` or `ValueError`); under `jax.jit` a batch element with bad scores has
    value -1 and threshold NaN. Bad input, ties and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      k: the budget, a Python int in [1, n] (static).

    Returns:
      `BudgetChoice` ``(value, threshold)``, each of shape ``[*batch]`` (value int32).

    Examples:
      >>> import jaxmetrics as jm
      >>> flagged, threshold = jm.budget_threshold([0.9, 0.5, 0.5, 0.1], k=2)
      >>> int(flagged), float(threshold)  # the tie at the 2nd place flags 3
      (3, 0.5)
    """
    k = check_count(k, "k")
    keys, codec = exact_order.order_keys(scores)
    scores = coercion.as_scores(keys)
    invalid = checks.check_finite(scores, "scores")
    if k > scores.shape[-1]:
        raise ValueError(f"`k` must be at most the number of samples {scores.shape[-1]}; got {k}.")
    value, threshold = _budget(scores, invalid, k)
    return BudgetChoice(value, codec.decode(threshold))


# One compiled program per eager call (each operation was a program of its own: 15 to compile
# for new shapes); inlined in a caller's trace. `k` is traced: one program for every budget.
@kernels.sample_jit
def _budget(scores: Array, invalid: Array, k) -> tuple[Array, Array]:
    threshold = batching.map_batch(lambda s: sorting.rank(s).scores[s.shape[0] - k], scores)
    selected = (scores >= threshold[..., None]).sum(-1)
    return batching.nan_where(invalid, (selected, threshold))
