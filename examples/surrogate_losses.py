"""Do metric surrogates beat cross-entropy? An honest experiment on imbalanced data.

Two settings with about 2% positives: "well-specified" (the label follows a logistic model that is
linear in the features, so a linear model can be exactly right) and "misspecified" (the log-odds
have interactions and a squared term a linear model cannot represent). Two models: a linear model
and a small MLP (one hidden layer of 16 tanh units). Seven ways to train, all with Adam, full batch:

* BCE: binary cross-entropy, F1 at the default threshold 0.5;
* weighted BCE: positives weighted by (1 - prevalence) / prevalence, F1 at 0.5;
* BCE + tuned threshold: the BCE model, F1 at the threshold that maximises F1 on a validation
  set, the fair baseline (Lipton, Elkan and Narayanaswamy 2014);
* soft-F1, pairwise AUC (squared hinge, O(n log n)), AUC-M, Smooth-AP: jaxmetrics.losses.

Every loss after the first two is also given a validation-tuned threshold, so the F1 column
compares decision rules fairly. Each configuration runs over several seeds (fresh data, fresh
initialisation), trained in one vmapped program per configuration; the test metrics are
jaxmetrics' own, and each surrogate is compared with BCE by a DeLong test per seed and a
bootstrap interval (jaxmetrics.bootstrap) of the mean paired difference over seeds.

    python examples/surrogate_losses.py            # 10 seeds, 22 minutes on 2 busy CPU cores
    python examples/surrogate_losses.py --quick    # 2 seeds, small sizes, under a minute
"""

from __future__ import annotations

import argparse
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxmetrics as jm
import jaxmetrics.losses as jl

FEATURES = 8
PREVALENCE = 0.02


def make_data(key, n, setting):
    """Features and 0/1 labels; the intercept is set so that about 2% are positive."""
    x = jax.random.normal(key, (n, FEATURES))
    if setting == "well-specified":
        logit = x @ jnp.linspace(1.0, -0.5, FEATURES)
    else:
        logit = 1.5 * x[:, 0] * x[:, 1] + x[:, 2] ** 2 - 1.0 + 0.5 * x[:, 3]

    # the intercept that makes the mean probability PREVALENCE, by bisection
    def mean_probability(intercept):
        return jax.nn.sigmoid(2.0 * (logit + intercept)).mean()

    def halve(_, bounds):
        low, high = bounds
        middle = (low + high) / 2
        too_many = mean_probability(middle) > PREVALENCE
        return jnp.where(too_many, low, middle), jnp.where(too_many, middle, high)

    low, high = jax.lax.fori_loop(0, 40, halve, (jnp.array(-50.0), jnp.array(50.0)))
    probability = jax.nn.sigmoid(2.0 * (logit + (low + high) / 2))
    labels = (jax.random.uniform(jax.random.fold_in(key, 1), (n,)) < probability).astype(jnp.int32)
    return x, labels


def init(key, model):
    if model == "linear":
        return {"w": jnp.zeros(FEATURES), "b": jnp.array(-3.0)}
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (FEATURES, 16)) / jnp.sqrt(FEATURES),
        "b1": jnp.zeros(16),
        "w2": jax.random.normal(k2, (16,)) / 4.0,
        "b2": jnp.array(-3.0),
    }


def forward(params, x, model):
    if model == "linear":
        return x @ params["w"] + params["b"]
    return jnp.tanh(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def objective(name, logits, labels, state):
    if name in ("BCE", "BCE + tuned threshold"):
        return optax.sigmoid_binary_cross_entropy(logits, labels).mean()
    if name == "weighted BCE":
        weight = jnp.where(labels == 1, (1 - PREVALENCE) / PREVALENCE, 1.0)
        return (weight * optax.sigmoid_binary_cross_entropy(logits, labels)).mean()
    if name == "soft-F1":
        return jl.soft_f_beta_loss(logits, labels)
    if name == "pairwise AUC":
        return jl.pairwise_auc_loss(logits, labels, surrogate="squared_hinge")
    if name == "AUC-M":
        return jl.auc_margin_objective(jax.nn.sigmoid(logits), labels, state)
    if name == "Smooth-AP":
        return jl.smooth_ap_loss(logits, labels, temperature=0.1)
    raise ValueError(name)


def train(name, model, key, x, labels, steps, learning_rate=0.05):
    """Full-batch Adam; AUC-M also descends on (a, b) and ascends on its dual variable alpha."""
    params = init(key, model)
    optimizer = optax.adam(learning_rate)
    opt_state = optimizer.init(params)
    auc_state = jl.AucMarginState(jnp.array(0.0), jnp.array(0.0), jnp.array(0.0))

    def step(carry, _):
        params, opt_state, auc_state = carry
        loss = lambda p, s: objective(name, forward(p, x, model), labels, s)  # noqa: E731
        grads, state_grads = jax.grad(loss, argnums=(0, 1))(params, auc_state)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        auc_state = jl.AucMarginState(
            auc_state.a - learning_rate * state_grads.a,
            auc_state.b - learning_rate * state_grads.b,
            jnp.maximum(0.0, auc_state.alpha + learning_rate * state_grads.alpha),
        )
        return (params, opt_state, auc_state), None

    (params, _, _), _ = jax.lax.scan(step, (params, opt_state, auc_state), None, length=steps)
    return params


@functools.cache
def fitter(name, model, steps):
    """One compiled, seed-vmapped trainer per (loss, model): the settings reuse it."""
    return jax.jit(jax.vmap(lambda k, x, y: train(name, model, k, x, y, steps)))


LOSSES = (
    "BCE",
    "weighted BCE",
    "BCE + tuned threshold",
    "soft-F1",
    "pairwise AUC",
    "AUC-M",
    "Smooth-AP",
)
DEFAULT_THRESHOLD = ("BCE", "weighted BCE")  # the rest get a validation-tuned threshold


def run_configuration(setting, model, seeds, sizes, steps):
    """Test logits [S, n] and validation-chosen thresholds [S] of every loss, and test labels."""
    n_train, n_val, n_test = sizes
    keys = jax.random.split(jax.random.key(0), seeds)
    data = jax.vmap(lambda k: make_data(k, n_train + n_val + n_test, setting))(keys)
    x, y = data
    split = lambda a, lo, hi: a[:, lo:hi]  # noqa: E731
    train_x, train_y = split(x, 0, n_train), split(y, 0, n_train)
    val_x, val_y = split(x, n_train, n_train + n_val), split(y, n_train, n_train + n_val)
    test_x, test_y = split(x, n_train + n_val, None), split(y, n_train + n_val, None)
    outputs = {}
    trained_bce = None
    for name in LOSSES:
        if name == "BCE + tuned threshold":
            params = trained_bce
        else:
            params = fitter(name, model, steps)(keys, train_x, train_y)
            if name == "BCE":
                trained_bce = params
        score = jax.vmap(lambda p, a: forward(p, a, model))
        val_logits, test_logits = score(params, val_x), score(params, test_x)
        if name in DEFAULT_THRESHOLD:
            threshold = jnp.zeros(seeds)
        else:
            _, threshold = jm.max_f_beta(val_logits, val_y)
        outputs[name] = (np.asarray(test_logits), np.asarray(threshold))
    return outputs, np.asarray(test_y)


def mean_with_interval(values, key):
    """Mean over seeds with a 95% bootstrap interval (jaxmetrics.bootstrap over the seeds)."""
    values = jnp.asarray(values, jnp.float32)
    mean = lambda v, sample_weight: (v * sample_weight).sum(-1) / sample_weight.sum(-1)  # noqa: E731
    result = jm.bootstrap(mean, values, key=key, num_resamples=2000)
    return float(result.estimate), float(result.low), float(result.high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, small sizes")
    args = parser.parse_args()
    seeds = 2 if args.quick else 10
    sizes = (1000, 600, 1500) if args.quick else (5000, 3000, 10000)
    steps = 40 if args.quick else 300
    started = time.perf_counter()
    print(
        f"{seeds} seeds; train/validation/test = {sizes}; {steps} Adam steps; about "
        f"{PREVALENCE:.0%} positives\n"
    )
    key = jax.random.key(1)
    for setting in ("well-specified", "misspecified"):
        for model in ("linear", "mlp"):
            outputs, labels = run_configuration(setting, model, seeds, sizes, steps)
            print(f"{setting}, {model} model (test prevalence {labels.mean():.3f})")
            print(
                f"  {'loss':<22} {'AUC':>6} {'AP':>6} {'F1':>6}   {'ΔAUC vs BCE [95%]':>24} "
                f"{'ΔAP vs BCE [95%]':>24} {'ΔF1 vs BCE+tuned [95%]':>24}  DeLong p<.05 (+/-)"
            )
            bce_logits, _ = outputs["BCE"]
            _, tuned = outputs["BCE + tuned threshold"]
            per_loss = {}
            for name, (logits, threshold) in outputs.items():
                auc = np.asarray(jm.roc_auc(logits, labels))
                ap = np.asarray(jm.average_precision(logits, labels))
                counts = jax.vmap(jm.confusion_counts)(logits, labels, threshold)
                f1 = np.asarray(jm.f_beta(counts, zero_division=0.0))
                per_loss[name] = (auc, ap, f1)
            for name, (logits, _) in outputs.items():
                auc, ap, f1 = per_loss[name]
                row = f"  {name:<22} {auc.mean():>6.3f} {ap.mean():>6.3f} {f1.mean():>6.3f}"
                if name not in ("BCE", "BCE + tuned threshold"):
                    key, k1, k2, k3 = jax.random.split(key, 4)
                    bce_auc, bce_ap, _ = per_loss["BCE"]
                    _, _, tuned_f1 = per_loss["BCE + tuned threshold"]
                    d_auc = mean_with_interval(auc - bce_auc, k1)
                    d_ap = mean_with_interval(ap - bce_ap, k2)
                    d_f1 = mean_with_interval(f1 - tuned_f1, k3)
                    tests = [
                        jm.delong_test(logits[s], bce_logits[s], labels[s]) for s in range(seeds)
                    ]
                    better = sum(float(t.p_value) < 0.05 and float(t.statistic) > 0 for t in tests)
                    worse = sum(float(t.p_value) < 0.05 and float(t.statistic) < 0 for t in tests)
                    row += (
                        "   "
                        + "  ".join(
                            f"{d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]" for d in (d_auc, d_ap, d_f1)
                        )
                        + f"    {better}/{worse} of {seeds}"
                    )
                print(row)
            print()
    print(f"total time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
