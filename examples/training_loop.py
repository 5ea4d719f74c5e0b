"""Evaluate during training with streaming states, on four (emulated) devices.

A logistic model is trained with optax on imbalanced synthetic data (about 10% positives). Every 50
steps the validation set is streamed through in batches: each batch is split over the devices of
a 1-D mesh, every device updates its own metric states, and `jax.lax.psum` merges them (their
merge is addition). The validation rows are also read as retrieval queries of 32 candidates
each, and a `streaming.Mean` of their NDCG@10 gives the mean NDCG@10 over the queries that have
a relevant item. At the end the test set gets AUC and AP with a bootstrap interval whose
resamples are split over the same mesh, and a DeLong interval.

    python examples/training_loop.py     # runs on CPU; emulates 4 devices if it finds only 1
"""

import os

if "device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec  # noqa: E402

import jaxmetrics as jm  # noqa: E402
from jaxmetrics import streaming  # noqa: E402

FEATURES, BATCH = 10, 512
QUERY_SIZE = 32  # candidates per retrieval query: a device's shard of a batch holds 4 queries


def make_data(key, n):
    x = jax.random.normal(key, (n, FEATURES))
    logit = x @ jnp.linspace(1.2, -0.8, FEATURES) - 3.6
    labels = jax.random.bernoulli(jax.random.fold_in(key, 1), jax.nn.sigmoid(logit))
    return x, labels.astype(jnp.int32)


def main() -> None:
    devices = jax.device_count()
    mesh = jax.make_mesh((devices,), ("devices",))
    split = NamedSharding(mesh, PartitionSpec("devices"))
    train_x, train_y = make_data(jax.random.key(0), 20_000)
    val_x, val_y = make_data(jax.random.key(1), 8 * BATCH)
    test_x, test_y = make_data(jax.random.key(2), 10_000)

    params = {"w": jnp.zeros(FEATURES), "b": jnp.zeros(())}
    optimizer = optax.adam(0.05)
    opt_state = optimizer.init(params)

    def logits_of(params, x):
        return x @ params["w"] + params["b"]

    @jax.jit
    def train_step(params, opt_state, x, y):
        loss = lambda p: optax.sigmoid_binary_cross_entropy(logits_of(p, x), y).mean()  # noqa: E731
        grads = jax.grad(loss)(params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    def empty_states():
        return streaming.Collection(
            {
                "curve": streaming.BinnedCurve.empty(200, low=-10.0, high=6.0),
                "at_zero": streaming.ConfusionState.empty(thresholds=[0.0]),
                "loss": streaming.Mean.empty(),
                "ndcg@10": streaming.Mean.empty(),
            }
        )

    def evaluate_shard(states, params, x, y):
        logits = logits_of(params, x)
        states = states.update(logits, y)
        states = states.update_mean("loss", optax.sigmoid_binary_cross_entropy(logits, y))
        queries, relevance = logits.reshape(-1, QUERY_SIZE), y.reshape(-1, QUERY_SIZE)
        ndcg = jm.ndcg(queries, relevance, k=10)  # [queries]
        # A query without a relevant item has no NDCG (NaN), and a Mean takes no NaN: give it
        # weight 0, as `jm.query_mean` leaves it out. Chosen by the relevance, not by isnan, so
        # that a NaN from bad scores still poisons the mean instead of vanishing.
        has_relevant = (relevance > 0).any(-1)
        states = states.update_mean(
            "ndcg@10",
            jnp.where(has_relevant, ndcg, 0.0),
            sample_weight=has_relevant.astype(ndcg.dtype),
        )
        return jax.lax.psum(states, "devices")  # every state here merges by addition

    evaluate_batch = jax.jit(
        jax.shard_map(
            evaluate_shard,
            mesh=mesh,
            in_specs=(
                PartitionSpec(),
                PartitionSpec(),
                PartitionSpec("devices"),
                PartitionSpec("devices"),
            ),
            out_specs=PartitionSpec(),
            check_vma=False,
        )
    )

    print(f"{devices} devices; {int(train_y.sum())} positives in {train_y.size} training rows")
    print(
        f"{'step':>5} {'val loss':>9} {'val AUC (binned)':>22} {'val AP':>7} {'recall@0':>9} "
        f"{'NDCG@10':>8}"
    )
    rng = np.random.default_rng(0)
    for step in range(1, 301):
        rows = rng.integers(0, train_y.size, BATCH)
        params, opt_state = train_step(params, opt_state, train_x[rows], train_y[rows])
        if step % 50 == 0:
            states = empty_states()
            for start in range(0, val_y.size, BATCH):
                x = jax.device_put(val_x[start : start + BATCH], split)
                y = jax.device_put(val_y[start : start + BATCH], split)
                states = states.merge(evaluate_batch(empty_states(), params, x, y))
            result = states.compute()
            curve = result["curve"]
            print(
                f"{step:>5} {float(result['loss']['mean']):>9.4f} "
                f"{float(curve['roc_auc']):>8.4f} ± {float(curve['roc_auc_max_error']):.4f} max "
                f"{float(curve['average_precision']):>7.4f} "
                f"{float(result['at_zero']['recall'][0]):>9.3f} "
                f"{float(result['ndcg@10']['mean']):>8.4f}"
            )

    test_logits = logits_of(params, test_x)
    key = jax.random.key(42)
    auc = jm.bootstrap(jm.roc_auc, test_logits, test_y, key=key, num_resamples=2000, mesh=mesh)
    ap = jm.bootstrap(
        jm.average_precision, test_logits, test_y, key=key, num_resamples=2000, mesh=mesh
    )
    delong = jm.delong(test_logits, test_y)
    print(
        f"\ntest AUC {float(auc.estimate):.4f}, bootstrap 95% [{float(auc.low):.4f}, "
        f"{float(auc.high):.4f}] (2,000 resamples over {devices} devices), DeLong "
        f"[{float(delong.low):.4f}, {float(delong.high):.4f}]"
    )
    print(
        f"test AP  {float(ap.estimate):.4f}, bootstrap 95% [{float(ap.low):.4f}, "
        f"{float(ap.high):.4f}]"
    )


if __name__ == "__main__":
    main()
