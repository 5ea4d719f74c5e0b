"""How far to trust an AUC: interval width against test-set size, and a paired comparison.

A logistic regression and a random forest are scored on test sets of 200 to 20,000 rows; for
each, the AUC of both models gets a 95% bootstrap interval (500 resamples) and a DeLong
interval, and the difference forest - logistic gets the paired bootstrap interval (the same
resampled rows for both models) and DeLong's paired test.

    python examples/error_bars.py            # needs scikit-learn (pip install -e '.[test]')
"""

import jax
import numpy as np
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

import jaxmetrics as jm


def main() -> None:
    X, y = make_classification(
        n_samples=30000, n_features=10, n_informative=5, flip_y=0.1, class_sep=1.0, random_state=0
    )
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=20000, random_state=0, stratify=y)
    logistic = LogisticRegression(max_iter=1000).fit(Xtr, ytr).predict_proba(Xte)[:, 1]
    forest = RandomForestClassifier(n_estimators=60, random_state=0, n_jobs=1).fit(Xtr, ytr)
    forest = forest.predict_proba(Xte)[:, 1]
    rng = np.random.default_rng(0)

    print(
        f"{'n test':>7}  {'logistic AUC [95% bootstrap]':>30}  {'width':>6}  "
        f"{'forest AUC [95% bootstrap]':>28}  {'forest - logistic [paired 95%]':>31}  "
        f"{'DeLong p':>8}"
    )
    for size in (200, 1000, 5000, 20000):
        rows = rng.choice(yte.size, size, replace=False)
        scores = np.stack([logistic[rows], forest[rows]]).astype(np.float32)
        labels = yte[rows]
        result = jm.bootstrap(
            jm.roc_auc, scores, labels, key=jax.random.key(size), num_resamples=500
        )
        difference = jm.paired_difference(result, first=1, second=0)
        test = jm.delong_test(scores[1], scores[0], labels)
        (a, b), (la, lb), (ha, hb) = result.estimate, result.low, result.high
        print(
            f"{size:>7}  {a:.3f} [{la:.3f}, {ha:.3f}]{'':>12}  {ha - la:>6.3f}  "
            f"{b:.3f} [{lb:.3f}, {hb:.3f}]{'':>10}  "
            f"[{float(difference.low):+.3f}, {float(difference.high):+.3f}]{'':>15}  "
            f"{float(test.p_value):>8.2g}"
        )
    delong = jm.delong(np.stack([logistic, forest]).astype(np.float32), yte)
    print(
        f"\nDeLong on all 20,000 rows: logistic {delong.auc[0]:.3f} "
        f"[{delong.low[0]:.3f}, {delong.high[0]:.3f}], forest {delong.auc[1]:.3f} "
        f"[{delong.low[1]:.3f}, {delong.high[1]:.3f}]"
    )


if __name__ == "__main__":
    main()
