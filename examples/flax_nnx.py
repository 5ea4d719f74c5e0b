"""Train a flax nnx model with optax and evaluate it with jaxmetrics inside `nnx.MultiMetric`.

A small MLP learns an imbalanced, non-linear synthetic problem (about 15% positives). Every
`--every` steps the validation set streams through a jitted eval step in batches, the last one
padded and masked: an `nnx.MultiMetric` holds flax's `Average` (the loss) beside jaxmetrics
states wrapped by `jaxmetrics.nnx.StreamingMetric` (the exact AUC, a binned ROC curve with its
error bound, the rates at logit 0). The eval step traces once. Beside the exact 1 - AUC the table
prints the pairwise surrogate that stands for it, so the gap between what is optimised and what
is measured shows as training goes. The same model is trained twice: with optax's BCE, then with
the loss swapped for `jaxmetrics.losses.pairwise_auc_loss` (three lines, marked below). At the
end the test AUC of both gets a bootstrap interval.

    python examples/flax_nnx.py            # about 10 s on a laptop CPU
    python examples/flax_nnx.py --steps 100 --every 50
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np
import optax
from flax import nnx

import jaxmetrics as jm
import jaxmetrics.losses as jl
from jaxmetrics import streaming
from jaxmetrics.nnx import StreamingMetric

FEATURES, BATCH, EVAL_BATCH = 8, 128, 256


def make_data(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Features and 0/1 labels of a non-linear problem with about 15% positives."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    logit = 2.0 * np.sin(2 * x[:, 0]) + 1.5 * x[:, 1] * x[:, 2] - 2.5
    return x, (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int32)


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(FEATURES, 32, rngs=rngs)
        self.out = nnx.Linear(32, 1, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        # nnx.Linear(32, 1) gives [n, 1]: take the column, samples on the last axis ([n])
        return self.out(jax.nn.relu(self.hidden(x)))[..., 0]


# The loss swap: BCE, or the surrogate of 1 - AUC, each a function of ([n] logits, [n] labels).
LOSSES = {
    "bce": lambda logits, y: optax.sigmoid_binary_cross_entropy(logits, y).mean(),
    "pairwise AUC": lambda logits, y: jl.pairwise_auc_loss(logits, y),
}


def eval_metrics() -> nnx.MultiMetric:
    return nnx.MultiMetric(
        loss=nnx.metrics.Average("loss"),
        exact=StreamingMetric(streaming.ExactCurve.empty(4096), scores="logits"),
        binned=StreamingMetric(streaming.BinnedCurve.empty(64, low=-8, high=4), scores="logits"),
        at_zero=StreamingMetric(streaming.ConfusionState.empty(thresholds=[0.0]), scores="logits"),
    )


traces = {"eval_step": 0}
timings: dict[str, float] = {}


@nnx.jit
def eval_step(model: MLP, metrics: nnx.MultiMetric, x, labels, mask) -> None:
    traces["eval_step"] += 1  # runs when traced, not when the compiled step runs
    logits = model(x)
    loss = optax.sigmoid_binary_cross_entropy(logits, labels)
    metrics.update(logits=logits, labels=labels, loss=loss, mask=mask)


def evaluate(model: MLP, metrics: nnx.MultiMetric, x: np.ndarray, y: np.ndarray) -> dict:
    """Stream the rows through `eval_step` in batches; the last one padded, its padding masked."""
    metrics.reset()
    for start in range(0, len(y), EVAL_BATCH):
        xb, yb = x[start : start + EVAL_BATCH], y[start : start + EVAL_BATCH]
        mask = np.zeros(EVAL_BATCH, np.float32)  # a float mask: the states keep their types
        mask[: len(yb)] = 1.0
        pad = EVAL_BATCH - len(yb)
        xb, yb = np.pad(xb, ((0, pad), (0, 0))), np.pad(yb, (0, pad))
        eval_step(model, metrics, xb, yb, mask)
    return metrics.compute()


# the sigmoid pairwise surrogate is 1 - AUC with each step softened: the value optimised
surrogate = nnx.jit(lambda logits, y: jl.pairwise_auc_loss(logits, y, surrogate="sigmoid"))


def train(name: str, data: dict, metrics: nnx.MultiMetric, steps: int, every: int) -> MLP:
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    loss_of = LOSSES[name]

    @nnx.jit
    def train_step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(lambda m: loss_of(m(x), y))(model)
        optimizer.update(model, grads)
        return loss

    x_val, y_val = data["val"]
    print(f"\n{name} loss")
    print(
        f"{'step':>5} {'val BCE':>8} {'AUC':>7} {'1 - AUC':>8} {'surrogate':>9} {'binned AUC':>17}"
    )
    rng = np.random.default_rng(1)
    x_train, y_train = data["train"]
    for step in range(1, steps + 1):
        rows = rng.integers(0, len(y_train), BATCH)
        train_step(model, optimizer, x_train[rows], y_train[rows])
        if step % every == 0 or step == steps:
            started = time.perf_counter()
            result = evaluate(model, metrics, x_val, y_val)
            auc = float(result["exact"]["roc_auc"])
            if "first evaluation" not in timings:  # compiles the eval step and the computes
                timings["first evaluation"] = time.perf_counter() - started
                print(f"      (first evaluation, compiling: {timings['first evaluation']:.2f} s)")
            gap = float(surrogate(model(x_val), y_val))
            binned = result["binned"]
            print(
                f"{step:>5} {float(result['loss']):>8.4f} {auc:>7.4f} {1 - auc:>8.4f} {gap:>9.4f} "
                f"{float(binned['roc_auc']):>8.4f} ± {float(binned['roc_auc_max_error']):.4f}"
            )
    print(f"recall at logit 0: {float(result['at_zero']['recall'][0]):.3f}")
    return model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    data = {"train": make_data(0, 4000), "val": make_data(1, 1000), "test": make_data(2, 2000)}
    print(f"{int(data['train'][1].sum())} positives in {len(data['train'][1])} training rows")
    x_test, y_test = data["test"]
    metrics = eval_metrics()  # one for both models: the eval step is traced once
    for name in LOSSES:
        model = train(name, data, metrics, args.steps, args.every)
        result = jm.bootstrap(
            jm.roc_auc, model(x_test), y_test, key=jax.random.key(0), num_resamples=args.resamples
        )
        print(
            f"test AUC ({name}): {float(result.estimate):.4f}, bootstrap 95% "
            f"[{float(result.low):.4f}, {float(result.high):.4f}]"
        )
    print(f"\neval step traced {traces['eval_step']} time(s) in all")
    print(f"total time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
