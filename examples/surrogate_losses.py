"""Do metric surrogates beat cross-entropy? A tuned, paired experiment on imbalanced data.

Every loss gets the same budget: full-batch Adam for the same number of steps from the same
initial parameters, at each of three learning rates (0.01, 0.03, 0.1), on 10 seeds (fresh data
and initialisation per seed). The rate is chosen per seed on a validation split, and each loss
is scored on a test split on the metric it targets as well as on the others.

Binary part. About 2% positives, 8 Gaussian features. "well-specified": the log-odds are linear
in the features; "misspecified": they hold an interaction and a square. Models: linear, and an
MLP (the linear part plus a hidden layer of 16 tanh units). Three configurations:
well-specified with each model, misspecified with the MLP. Round one's fourth, misspecified
with the linear model, is dropped: every loss was near chance on AUC there, so it said nothing
about the losses. Losses, with the metric each targets:

* BCE, the baseline; weighted BCE (positives weighted 49, the inverse prevalence odds), F1;
* soft-F1 (`soft_f_beta_loss`), F1;
* pairwise AUC (squared hinge), AUC-M (`auc_margin_objective` on sigmoid(logits)) and
  compositional AUC (`compositional_auc_loss`), AUC; AUC-M's and compositional AUC's a, b
  and alpha take a plain gradient step at the same rate (down on a and b, up on alpha, which
  stays >= 0): the descent-ascent of Yuan et al.'s PESG without its proximal term;
* Smooth-AP (temperature 0.1) and SOAP (`soap_loss` on the logits, full batch, one state
  entry per training positive), AP;
* partial AUC, CVaR and KL forms (`partial_auc_loss(max_fpr=0.1)`, squared hinge, KL
  temperature 1), pAUC at FPR <= 0.1;
* two-way partial AUC, CVaR form (`two_way_partial_auc_loss(min_tpr=0.5, max_fpr=0.1)`,
  squared hinge: the pair term over the bottom half of the positives and the top 10% of the
  negatives by score), TPAUC.

The multilabel AUC-M (`multilabel_auc_margin_loss`) is not a row of its own: it is the mean over
labels of `auc_margin_objective`, each label with its own a, b and alpha, so on the one binary
label here it is AUC-M, which is in the table.

Metrics, on 10,000 test rows: AUC, AP, pAUC, TPAUC and F1. pAUC is the raw area under the ROC
curve over FPR in [0, 0.1] (`partial_roc_auc`) divided by 0.1, the mean TPR over that band; not
McClish's standardisation, which is undefined (NaN) where a weak model's curve lies below the
diagonal over the band. TPAUC is the two-way partial AUC in Yang et al.'s (2021) empirical form,
with a = 0.5 and b = 0.1: the fraction of correctly ordered pairs (ties 1/2) between the bottom
ceil((1 - a) P) of the P positives by score and the top ceil(b N) of the N negatives, an
estimate of the ROC area over the corner TPR >= a, FPR <= b divided by the corner's area
(1 - a) b. F1 is taken at a threshold tuned on validation (`max_f_beta`) for every
loss: BCE with a tuned threshold is the fair F1 baseline (Lipton, Elkan and Narayanaswamy 2014).

Rate selection. Each surrogate's rate is the one with the best validation value of its target
metric (F1 at the validation-tuned threshold for the F1 losses); all its columns report that
one model. BCE is given its best rate per column: its AUC column uses the rate with the best
validation AUC, its AP column the best validation AP, and so on. A surrogate that beats BCE in
its target column therefore beats a BCE tuned for that metric; in the other columns the
comparison leans towards BCE.

Learning-to-rank part. Queries of 50 items with 8 Gaussian features; the grade (0-3) counts the
cuts passed by a nonlinear utility (an interaction, a square and two linear terms) plus a query
offset that the features do not show and item noise. Linear and MLP scorers, the same grid and
seeds. Losses: pointwise MSE on the grade (the baseline: a regression on the relevance that
NDCG counts), ApproxNDCG and ListNet (temperature 1), and a pairwise logistic loss
(`pairwise_auc_loss` per query with relevance > 0 as the positives; it ignores the grades
above 1). Every loss's rate is chosen by validation NDCG@10 (`ndcg(k=10)`, mean over queries
with `query_mean`).

Intervals. Within a seed every loss sees the same data and initial parameters, so the
difference to the baseline is paired; the tables give its mean over seeds with a 95%
percentile bootstrap interval over the seeds (`jaxmetrics.bootstrap`, 2000 resamples, one call
for all comparisons). With 10 seeds that interval is narrower than a t interval (1.96 x
sqrt(9/10) against 2.26 standard errors), and with about 150 comparisons a few intervals
exclude 0 by chance: read a lone borderline star with care. The summary lists, for the targeted
metric only, which comparisons are better, worse, or not clearly different.

Sizes. Per seed: 1500 training rows (about 30 positives), 10,000 validation and 10,000 test
rows; 200 training, 1000 validation and 1000 test queries; 150 steps. The validation split is as
large as the test split so that the rate and threshold choices rest on about 200 positives.
Smooth-AP, SOAP and the KL partial AUC sum a pair term over every pair of rows at each step;
their time grows about with the square of the training rows and dominates the run, which is
what holds the training set to 1500 rows.

Compile time. All losses of a part train in one compiled program, vmapped over configurations,
seeds and rates (the linear model is the MLP with its hidden layer switched off, so both share
the program); the metrics of a part are one more. --quick is then mostly compilation.

    python examples/surrogate_losses.py            # 10 seeds: 14 minutes on 2 busy CPU cores
    python examples/surrogate_losses.py --quick    # 2 seeds, small sizes: 35 s (2 busy cores)
"""

from __future__ import annotations

import argparse
import functools
import math
import time
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxmetrics as jm
import jaxmetrics.losses as jl

FEATURES = 8
HIDDEN = 16
PREVALENCE = 0.02
LEARNING_RATES = (0.01, 0.03, 0.1)
MAX_FPR = 0.1
MIN_TPR = 0.5  # the two-way partial AUC's corner: TPR >= MIN_TPR, FPR <= MAX_FPR
TOP_K = 10
ITEMS = 50
RELEVANCE_CUTS = (3.0, 4.5, 6.0)
BINARY_METRICS = ("AUC", "AP", "pAUC", "TPAUC", "F1")
BINARY_CONFIGURATIONS = (
    ("well-specified", "linear"),
    ("well-specified", "mlp"),
    ("misspecified", "mlp"),
)
RANKING_MODELS = ("linear", "mlp")
SETTINGS = ("well-specified", "misspecified")  # data streams 0 and 1 of each seed
RANKING_STREAM, INIT_STREAM = 2, 3
NDCG = f"NDCG@{TOP_K}"


class Sizes(NamedTuple):
    seeds: int
    train: int  # training rows of the binary problems
    evaluation: int  # validation rows, and as many test rows
    steps: int  # full-batch Adam steps, every loss
    train_queries: int  # learning-to-rank queries of ITEMS items each
    evaluation_queries: int  # validation queries, and as many test queries


FULL = Sizes(
    seeds=10, train=1500, evaluation=10000, steps=150, train_queries=200, evaluation_queries=1000
)
QUICK = Sizes(
    seeds=2, train=400, evaluation=2000, steps=20, train_queries=40, evaluation_queries=100
)


# ---------------------------------------------------------------------------------------------
# Data


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def binary_data(rng, n, setting):
    """Features [n, F] and 0/1 labels [n], about PREVALENCE positive (NumPy: drawing the data
    with jax.random would compile another program, for nothing).

    "well-specified": the log-odds are linear in the features. "misspecified": they hold an
    interaction and a square that a linear model cannot represent.
    """
    x = rng.standard_normal((n, FEATURES))
    if setting == "well-specified":
        logit = x @ np.linspace(1.0, -0.5, FEATURES)
    else:
        logit = 1.5 * x[:, 0] * x[:, 1] + x[:, 2] ** 2 - 1.0 + 0.5 * x[:, 3]
    low, high = -50.0, 50.0  # the intercept that makes the mean probability PREVALENCE
    for _ in range(50):
        middle = (low + high) / 2
        if sigmoid(2 * (logit + middle)).mean() > PREVALENCE:
            high = middle
        else:
            low = middle
    labels = rng.uniform(size=n) < sigmoid(2 * (logit + (low + high) / 2))
    return x.astype(np.float32), labels.astype(np.int32)


def ranking_data(rng, queries):
    """Items [Q, ITEMS, F] and graded relevance 0..3 [Q, ITEMS].

    The grade counts the RELEVANCE_CUTS passed by a nonlinear utility of the item's features
    plus a query offset (shared by the query's items, not observed) and item noise.
    """
    x = rng.standard_normal((queries, ITEMS, FEATURES))
    utility = 1.5 * x[..., 0] * x[..., 1] + x[..., 2] ** 2 + 0.5 * x[..., 3] - x[..., 4]
    offset = rng.standard_normal((queries, 1))
    noise = 0.5 * rng.standard_normal((queries, ITEMS))
    passed = (utility + offset + noise)[..., None] > np.asarray(RELEVANCE_CUTS)
    return x.astype(np.float32), passed.sum(-1).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# Model and losses


PARAM_SHAPES = (
    ("w", (FEATURES,)),
    ("b", ()),
    ("w1", (FEATURES, HIDDEN)),
    ("b1", (HIDDEN,)),
    ("w2", (HIDDEN,)),
)


def init_params(rng, bias):
    """One parameter vector: a linear part (zero weights, intercept `bias`) and a hidden layer
    of HIDDEN tanh units. One vector rather than a dict of five arrays halves the compile time
    of the trainers (Adam's update is then one set of operations, not five)."""
    w1 = rng.standard_normal((FEATURES, HIDDEN)) / np.sqrt(FEATURES)
    w2 = rng.standard_normal(HIDDEN) / 4.0
    parts = (np.zeros(FEATURES), [bias], w1.ravel(), np.zeros(HIDDEN), w2)
    return np.concatenate(parts).astype(np.float32)


def unpack(params):
    """The parameter vector as a dict of PARAM_SHAPES."""
    named, start = {}, 0
    for name, shape in PARAM_SHAPES:
        size = math.prod(shape)
        named[name] = params[start : start + size].reshape(shape)
        start += size
    return named


def forward(params, x, hidden):
    """Scores [...] of features [..., F]: linear, plus the tanh layer where `hidden` is 1.

    With `hidden` 0 the hidden weights get zero gradients and Adam leaves them where they are,
    so the linear model and the MLP (a linear part plus a hidden layer) share one program.
    """
    p = unpack(params)
    linear = x @ p["w"] + p["b"]
    return linear + hidden * (jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"])


class Loss(NamedTuple):
    """A training loss: `value(scores, labels, state) -> (loss, state)` and its target metric."""

    name: str
    target: str  # the metric it stands in for, or "baseline"
    value: Callable
    init_state: Callable = lambda n: ()  # state for a training set of n rows
    min_max: bool = False  # descend on the state's a and b, ascend on its alpha (AUC-M)


def stateless(loss):
    """`value` of a loss without state from `loss(scores, labels)`; the ranking losses give one
    value per query, and the mean is taken."""

    def value(scores, labels, state):
        return loss(scores, labels).mean(), state

    return value


def bce(logits, labels):
    return optax.sigmoid_binary_cross_entropy(logits, labels)


def weighted_bce(logits, labels):
    weight = jnp.where(labels == 1, (1 - PREVALENCE) / PREVALENCE, 1.0)
    return weight * optax.sigmoid_binary_cross_entropy(logits, labels)


def auc_margin_state(n):
    return jl.AucMarginState(jnp.array(0.0), jnp.array(0.0), jnp.array(0.0))


def auc_m(logits, labels, state):
    return jl.auc_margin_objective(jax.nn.sigmoid(logits), labels, state), state


def compositional_auc(logits, labels, state):
    return jl.compositional_auc_loss(logits, labels, state), state


def soap(logits, labels, state):
    """SOAP on the full batch: every training positive has its own entry, ids from 0."""
    ids = jnp.where(labels == 1, jnp.cumsum(labels) - 1, -1)
    return jl.soap_loss.loss(state, logits, labels, ids)


def squared_error(scores, relevance):
    return (scores - relevance) ** 2


def pairwise_logistic(scores, relevance):
    return jl.pairwise_auc_loss(scores, relevance > 0)


BINARY_LOSSES = (
    Loss("BCE", "baseline", stateless(bce)),
    Loss("weighted BCE", "F1", stateless(weighted_bce)),
    Loss("soft-F1", "F1", stateless(jl.soft_f_beta_loss)),
    Loss(
        "pairwise AUC",
        "AUC",
        stateless(functools.partial(jl.pairwise_auc_loss, surrogate="squared_hinge")),
    ),
    Loss("AUC-M", "AUC", auc_m, auc_margin_state, min_max=True),
    Loss("compositional AUC", "AUC", compositional_auc, auc_margin_state, min_max=True),
    Loss("Smooth-AP", "AP", stateless(functools.partial(jl.smooth_ap_loss, temperature=0.1))),
    Loss("SOAP", "AP", soap, jl.soap_loss.init),
    Loss(
        "pAUC CVaR",
        "pAUC",
        stateless(functools.partial(jl.partial_auc_loss, max_fpr=MAX_FPR, method="cvar")),
    ),
    Loss(
        "pAUC KL",
        "pAUC",
        stateless(functools.partial(jl.partial_auc_loss, max_fpr=MAX_FPR, method="kl")),
    ),
    Loss(
        "two-way pAUC CVaR",
        "TPAUC",
        stateless(
            functools.partial(
                jl.two_way_partial_auc_loss, min_tpr=MIN_TPR, max_fpr=MAX_FPR, method="cvar"
            )
        ),
    ),
)
RANKING_LOSSES = (
    Loss("pointwise MSE", "baseline", stateless(squared_error)),
    Loss("ApproxNDCG", NDCG, stateless(jl.approx_ndcg_loss)),
    Loss("ListNet", NDCG, stateless(jl.listnet_loss)),
    Loss("pairwise logistic", NDCG, stateless(pairwise_logistic)),
)


# ---------------------------------------------------------------------------------------------
# Training and scoring


def descent_ascent(state, grads, learning_rate):
    """One plain gradient step on AUC-M's state: down on a and b, up on alpha (kept >= 0)."""
    return jl.AucMarginState(
        state.a - learning_rate * grads.a,
        state.b - learning_rate * grads.b,
        jnp.maximum(0.0, state.alpha + learning_rate * grads.alpha),
    )


def train(loss, x, labels, hidden, params, learning_rate, steps):
    """Parameters after `steps` full-batch Adam steps on `loss` from `params`."""
    optimizer = optax.adam(learning_rate)

    def objective(params, state):
        return loss.value(forward(params, x, hidden), labels, state)

    def step(carry, _):
        params, opt_state, state = carry
        if loss.min_max:
            (grads, state_grads), _ = jax.grad(objective, (0, 1), has_aux=True)(params, state)
            state = descent_ascent(state, state_grads, learning_rate)
        else:
            grads, state = jax.grad(objective, has_aux=True)(params, state)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state, state), None

    carry = (params, optimizer.init(params), loss.init_state(labels.size))
    (params, _, _), _ = jax.lax.scan(step, carry, None, length=steps)
    return params


def vmapped_train(loss, steps):
    """`train` vmapped over configurations, seeds and learning rates: x [C, S, ...], labels
    [C, S, ...], hidden [C], initial parameters [S, P] and rates [R] give parameters
    [C, S, R, P]."""

    def one(x, labels, hidden, params, learning_rate):
        return train(loss, x, labels, hidden, params, learning_rate, steps)

    over_rates = jax.vmap(one, in_axes=(None, None, None, None, 0))
    over_seeds = jax.vmap(over_rates, in_axes=(0, 0, None, 0, None))
    return jax.vmap(over_seeds, in_axes=(0, 0, 0, None, None))


def score(params, x, hidden):
    """Scores [C, S, R, ...] of parameters [C, S, R, P] on features [C, S, ..., F]."""
    over_rates = jax.vmap(forward, in_axes=(0, None, None))
    over_seeds = jax.vmap(over_rates, in_axes=(0, 0, None))
    return jax.vmap(over_seeds, in_axes=(0, 0, 0))(params, x, hidden)


@functools.partial(jax.jit, static_argnums=(0, 1))
def train_all(losses, steps, splits, hidden, params):
    """Validation and test scores [L, C, S, R, ...] of every loss, in one compiled program.

    One program for all the losses compiles in well under half the time of one program per
    loss (about 12 s against 31 s of CPU time for ten binary losses on a 2-core CPU).
    """
    (train_x, train_y), (val_x, _), (test_x, _) = splits
    rates = jnp.asarray(LEARNING_RATES)
    val_scores, test_scores = [], []
    for loss in losses:
        trained = vmapped_train(loss, steps)(train_x, train_y, hidden, params, rates)
        val_scores.append(score(trained, val_x, hidden))
        test_scores.append(score(trained, test_x, hidden))
    return jnp.stack(val_scores), jnp.stack(test_scores)


def finite_scores(val_scores, test_scores):
    """The scores [L, C, S, R, ...] as NumPy arrays, a run's scores set to 0 (a constant scorer)
    where any of them is not finite, and the number of such runs."""
    val_scores, test_scores = np.asarray(val_scores), np.asarray(test_scores)
    per_run = tuple(range(4, val_scores.ndim))
    finite = np.isfinite(val_scores).all(per_run) & np.isfinite(test_scores).all(per_run)
    failed = int((~finite).sum())
    finite = finite.reshape(finite.shape + (1,) * len(per_run))
    return np.where(finite, val_scores, 0.0), np.where(finite, test_scores, 0.0), failed


def split(arrays, sizes):
    """Cut the sample axis (axis 2 of [C, S, n, ...]) into consecutive parts of `sizes`."""
    bounds = np.cumsum((0,) + tuple(sizes))
    return [tuple(a[:, :, lo:hi] for a in arrays) for lo, hi in zip(bounds[:-1], bounds[1:])]


# ---------------------------------------------------------------------------------------------
# Metrics


def two_way_partial_auc(scores, labels, min_tpr=MIN_TPR, max_fpr=MAX_FPR):
    """Two-way partial AUC, shape [...], of scores [..., n] and 0/1 labels (broadcasting), in
    Yang et al.'s (2021) empirical form: the fraction of correctly ordered pairs (a tie counts
    1/2) between the bottom ceil((1 - min_tpr) P) of the P positives by score and the top
    ceil(max_fpr N) of the N negatives; an estimate of the ROC area over TPR >= min_tpr,
    FPR <= max_fpr divided by (1 - min_tpr) max_fpr. Of scores tied at a cut-off, the ones kept
    are chosen by index (arbitrarily); the value does not depend on the choice, since the tied
    scores are equal.
    """
    labels = jnp.broadcast_to(labels, scores.shape)
    positive = labels == 1

    def rank(key):  # each entry's position in ascending order of `key` along the last axis
        return jnp.argsort(jnp.argsort(key, axis=-1), axis=-1)

    def kept(fraction, count):  # ceil(fraction * count), forgiving float rounding
        slack = 1 - 2 * jnp.finfo(scores.dtype).eps
        return jnp.ceil(fraction * count.sum(-1, keepdims=True).astype(scores.dtype) * slack)

    # positives first, lowest score first; negatives first, highest score first
    bottom_positives = rank(jnp.where(positive, scores, jnp.inf)) < kept(1 - min_tpr, positive)
    top_negatives = rank(jnp.where(positive, jnp.inf, -scores)) < kept(max_fpr, ~positive)
    mask = (positive & bottom_positives) | (~positive & top_negatives)
    return jm.roc_auc(scores, labels, sample_weight=mask.astype(scores.dtype))


@jax.jit
def binary_metrics(val_scores, test_scores, val_labels, test_labels):
    """Validation and test metrics of every run, {name: [L, C, S, R]} each, in one program.

    AUC, AP, pAUC (the ROC area over FPR in [0, MAX_FPR] divided by MAX_FPR: the mean TPR over
    that band), TPAUC (`two_way_partial_auc`) and F1: the best F1 over thresholds on validation,
    and on test the F1 at that validation threshold.
    """
    scores = jnp.stack([val_scores, test_scores])
    labels = jnp.stack([val_labels, test_labels])[:, None, :, :, None, :]
    auc = jm.roc_auc(scores, labels)
    ap = jm.average_precision(scores, labels)
    pauc = jm.partial_roc_auc(scores, labels, fpr_range=(0.0, MAX_FPR)) / MAX_FPR
    tpauc = two_way_partial_auc(scores, labels)
    val_f1, threshold = jm.max_f_beta(val_scores, labels[0])
    n = scores.shape[-1]
    flat_labels = jnp.broadcast_to(labels[1], test_scores.shape).reshape(-1, n)
    flat_scores, flat_thresholds = test_scores.reshape(-1, n), threshold.reshape(-1)
    counts = jax.vmap(jm.confusion_counts)(flat_scores, flat_labels, flat_thresholds)
    test_f1 = jm.f_beta(counts, zero_division=0.0).reshape(threshold.shape)
    val = {"AUC": auc[0], "AP": ap[0], "pAUC": pauc[0], "TPAUC": tpauc[0], "F1": val_f1}
    test = {"AUC": auc[1], "AP": ap[1], "pAUC": pauc[1], "TPAUC": tpauc[1], "F1": test_f1}
    return val, test


@jax.jit
def ranking_metrics(val_scores, test_scores, val_relevance, test_relevance):
    """Validation and test mean NDCG@10 over queries of every run, {NDCG: [L, C, S, R]}."""
    scores = jnp.stack([val_scores, test_scores])
    relevance = jnp.stack([val_relevance, test_relevance])[:, None, :, :, None]
    mean_ndcg = jm.query_mean(jm.ndcg(scores, relevance, k=TOP_K))
    return {NDCG: mean_ndcg[0]}, {NDCG: mean_ndcg[1]}


def as_numpy(metrics):
    return {name: np.asarray(values, np.float64) for name, values in metrics.items()}


# ---------------------------------------------------------------------------------------------
# The two experiments


def stack_seeds(draw, seeds, stream):
    """`draw(rng)` for each seed, its arrays stacked on a new leading axis [S, ...]; the
    generator of seed s and data stream `stream` is ``np.random.default_rng([s, stream])``."""
    draws = [draw(np.random.default_rng([seed, stream])) for seed in range(seeds)]
    return tuple(jnp.asarray(np.stack(arrays)) for arrays in zip(*draws))


def initial_params(seeds, bias):
    """Initial parameters [S, P], one draw per seed, shared by every loss, rate and model."""
    draws = [init_params(np.random.default_rng([seed, INIT_STREAM]), bias) for seed in range(seeds)]
    return jnp.asarray(np.stack(draws))


class Part(NamedTuple):
    """One experiment's runs: validation and test values {metric: [L, C, S, R]}."""

    losses: tuple[Loss, ...]
    titles: list[str]  # one per configuration
    headers: list[str]  # the line above each configuration's table
    metrics: tuple[str, ...]
    val: dict
    test: dict
    intro: str
    failed: int


def binary_experiment(sizes):
    """Train every binary loss on every configuration; their validation and test metrics."""
    total = sizes.train + 2 * sizes.evaluation
    data = {  # per setting, x [S, n, F] and y [S, n]
        setting: stack_seeds(
            functools.partial(binary_data, n=total, setting=setting), sizes.seeds, stream
        )
        for stream, setting in enumerate(SETTINGS)
    }
    x = jnp.stack([data[setting][0] for setting, _ in BINARY_CONFIGURATIONS])
    y = jnp.stack([data[setting][1] for setting, _ in BINARY_CONFIGURATIONS])
    hidden = jnp.asarray([model == "mlp" for _, model in BINARY_CONFIGURATIONS], jnp.float32)
    splits = split((x, y), (sizes.train, sizes.evaluation, sizes.evaluation))
    params = initial_params(sizes.seeds, -3.0)
    scores = train_all(BINARY_LOSSES, sizes.steps, splits, hidden, params)
    val_scores, test_scores, failed = finite_scores(*scores)
    metrics = binary_metrics(val_scores, test_scores, splits[1][1], splits[2][1])
    val, test = map(as_numpy, metrics)
    titles = [f"{setting}, {model}" for setting, model in BINARY_CONFIGURATIONS]
    prevalence = np.asarray(splits[2][1]).mean(axis=(1, 2))
    headers = [f"{t} model (test prevalence {p:.3f})" for t, p in zip(titles, prevalence)]
    intro = (
        f"Binary part: {sizes.train} training, {sizes.evaluation} validation and "
        f"{sizes.evaluation} test rows per seed, about {PREVALENCE:.0%} positives.\n"
        "Means over seeds. Δ: paired difference to BCE with its rate chosen by that column's "
        "metric on\nvalidation (F1: BCE at its validation-tuned threshold), with a 95% bootstrap "
        "interval over\nseeds; * when the interval excludes 0. rate: how many seeds chose each "
        "rate, by the loss's\ntarget metric on validation. pAUC: the ROC area over FPR <= "
        f"{MAX_FPR} divided by {MAX_FPR} (the mean TPR\nover that band). TPAUC: the fraction of "
        f"correctly ordered pairs between the bottom {1 - MIN_TPR:.0%} of the\npositives and "
        f"the top {MAX_FPR:.0%} of the negatives by score (two-way partial AUC, TPR >= "
        f"{MIN_TPR}, FPR <= {MAX_FPR})."
    )
    return Part(BINARY_LOSSES, titles, headers, BINARY_METRICS, val, test, intro, failed)


def ranking_experiment(sizes):
    """Train every ranking loss on the learning-to-rank set; their validation and test NDCG."""
    total = sizes.train_queries + 2 * sizes.evaluation_queries
    x, relevance = stack_seeds(lambda rng: ranking_data(rng, total), sizes.seeds, RANKING_STREAM)
    models = (len(RANKING_MODELS),)
    x = jnp.broadcast_to(x, models + x.shape)
    relevance = jnp.broadcast_to(relevance, models + relevance.shape)
    hidden = jnp.asarray([model == "mlp" for model in RANKING_MODELS], jnp.float32)
    queries = (sizes.train_queries, sizes.evaluation_queries, sizes.evaluation_queries)
    splits = split((x, relevance), queries)
    params = initial_params(sizes.seeds, 0.0)
    scores = train_all(RANKING_LOSSES, sizes.steps, splits, hidden, params)
    val_scores, test_scores, failed = finite_scores(*scores)
    metrics = ranking_metrics(val_scores, test_scores, splits[1][1], splits[2][1])
    val, test = map(as_numpy, metrics)
    titles = [f"learning to rank, {model}" for model in RANKING_MODELS]
    headers = [f"{title} scorer" for title in titles]
    test_relevance = np.asarray(splits[2][1][0])
    no_relevant = (test_relevance.max(-1) == 0).mean()
    intro = (
        f"Learning-to-rank part: {sizes.train_queries} training, {sizes.evaluation_queries} "
        f"validation and {sizes.evaluation_queries} test queries of {ITEMS} items per seed;\n"
        f"grades 0-3, {(test_relevance > 0).mean():.0%} of items relevant, {no_relevant:.0%} of "
        f"queries without a relevant item (left out of the mean\n{NDCG}). Δ: paired difference "
        f"to pointwise MSE, whose rate is also chosen by validation {NDCG}."
    )
    return Part(RANKING_LOSSES, titles, headers, (NDCG,), val, test, intro, failed)


# ---------------------------------------------------------------------------------------------
# Selection and comparison


def choose(val, test, chosen_by, reported):
    """Per loss, configuration and seed: the test `reported` metric at the learning rate with
    the best validation `chosen_by` metric (the first of equals), and that rate's index."""
    pick = np.argmax(val[chosen_by], axis=-1)
    return np.take_along_axis(test[reported], pick[..., None], axis=-1)[..., 0], pick


class Comparison(NamedTuple):
    loss: str
    configuration: str
    metric: str
    targeted: bool
    interval: np.ndarray  # the mean paired difference over seeds, low, high


def paired_differences(part):
    """Test means per (loss, metric) [C, S] (the baseline's rate chosen per metric, each other
    loss's by its target), the chosen rates, and the differences to the baseline per
    comparison: rows (loss, configuration, metric, targeted) and [K, S]."""
    values, picks, rows, differences = {}, {}, [], []
    baseline_name = part.losses[0].name
    for m in part.metrics:
        baseline, baseline_pick = choose(part.val, part.test, m, m)
        values[baseline_name, m], picks[baseline_name, m] = baseline[0], baseline_pick[0]
        for i, loss in enumerate(part.losses[1:], start=1):
            own, own_pick = choose(part.val, part.test, loss.target, m)
            values[loss.name, m], picks[loss.name, loss.target] = own[i], own_pick[i]
            for c, title in enumerate(part.titles):
                rows.append((loss.name, title, m, m == loss.target))
                differences.append(own[i, c] - baseline[0, c])
    return values, picks, rows, differences


def mean_intervals(differences, key):
    """Per row of [K, S]: the mean over seeds and its 95% percentile bootstrap interval, from
    one jm.bootstrap call (the rows share their resamples of the seeds)."""

    def mean(values, sample_weight):
        return (values * sample_weight).sum(-1) / sample_weight.sum(-1)

    values = jnp.asarray(np.asarray(differences), jnp.float32)
    result = jm.bootstrap(mean, values, key=key, num_resamples=2000)
    return np.stack([np.asarray(x) for x in (result.estimate, result.low, result.high)], -1)


# ---------------------------------------------------------------------------------------------
# Printing


def interval_text(interval):
    """ "+0.012 [+0.003, +0.021]*", the star when the interval excludes 0."""
    mean, low, high = interval
    star = "*" if low > 0 or high < 0 else " "
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]{star}"


def picks_text(pick):
    """How many seeds chose each learning rate, "a/b/c" in LEARNING_RATES order."""
    return "/".join(str(int((pick == r).sum())) for r in range(len(LEARNING_RATES)))


def print_part(part, values, picks, comparisons):
    print(part.intro + "\n")
    rates = "/".join(f"{r:g}" for r in LEARNING_RATES)
    baseline = part.losses[0].name
    for c, title in enumerate(part.titles):
        by_key = {(k.loss, k.metric): k for k in comparisons if k.configuration == title}
        columns = "".join(f"{m:>8}" for m in part.metrics)
        deltas = "".join(f"{'Δ' + m + ' [95%]':>26}" for m in part.metrics)
        print(part.headers[c])
        print(f"  {'loss':<19} {'target':<8} {'rate ' + rates:>17}{columns}{deltas}")
        for loss in part.losses:
            means = "".join(f"{values[loss.name, m][c].mean():>8.3f}" for m in part.metrics)
            if loss.name == baseline:
                print(f"  {loss.name:<19} {'-':<8} {'per column':>17}{means}")
                continue
            chosen = picks_text(picks[loss.name, loss.target][c])
            cells = "".join(
                f"{interval_text(by_key[loss.name, m].interval):>26}" for m in part.metrics
            )
            print(f"  {loss.name:<19} {loss.target:<8} {chosen:>17}{means}{cells}")
        chosen = ", ".join(f"by {m} {picks_text(picks[baseline, m][c])}" for m in part.metrics)
        print(f"  {baseline}'s rates, seeds at {rates}: {chosen}\n")
    if part.failed:
        print(f"{part.failed} runs gave non-finite scores (scored as a constant)\n")


def print_summary(comparisons, seeds):
    print(
        "Summary: each surrogate on the metric it targets against the fair baseline (BCE, or\n"
        f"pointwise MSE for {NDCG}, its rate chosen by that metric on validation; F1 at a\n"
        f"validation-tuned threshold for both). Mean paired difference over {seeds} seeds, 95%\n"
        "bootstrap interval; 'better' and 'worse': the interval excludes 0."
    )
    verdicts = {"better": [], "no clear difference": [], "worse": []}
    for k in comparisons:
        if k.targeted:
            _, low, high = k.interval
            verdict = "better" if low > 0 else "worse" if high < 0 else "no clear difference"
            verdicts[verdict].append(k)
    for verdict, found in verdicts.items():
        print(f"  {verdict} ({len(found)} of {sum(map(len, verdicts.values()))}):")
        for k in found:
            print(
                f"    {k.metric:<8} {k.loss:<19} {k.configuration:<26} {interval_text(k.interval)}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, small sizes, few steps")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    started = time.perf_counter()
    command = "python examples/surrogate_losses.py" + (" --quick" if args.quick else "")
    print(
        f"{command}\n{sizes.seeds} seeds; {sizes.steps} full-batch Adam steps; learning rates "
        f"{', '.join(f'{r:g}' for r in LEARNING_RATES)} for every loss; jax {jax.__version__} "
        f"on {jax.devices()[0].platform}\n"
    )
    parts = [binary_experiment(sizes), ranking_experiment(sizes)]
    found = [paired_differences(part) for part in parts]
    rows = [row for _, _, part_rows, _ in found for row in part_rows]
    differences = [d for _, _, _, part_differences in found for d in part_differences]
    intervals = mean_intervals(differences, jax.random.key(2))
    comparisons = [Comparison(*row, interval) for row, interval in zip(rows, intervals)]
    for part, (values, picks, _, _) in zip(parts, found):
        print_part(part, values, picks, comparisons)
    print_summary(comparisons, sizes.seeds)
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
