"""Reading a multiclass table: which score column holds which class, and rows that are
probability vectors. numpy only, like `read`, so bad input fails before JAX starts.

The mode is chosen here (`load`): multiclass when --multiclass says so, or when the label column
holds more than two classes and --positive does not ask for a binary report.

How score columns map to classes: one --score column per class. When every column is named
after a class (`cat`, `dog`, `fox` for labels cat/dog/fox), each is that class's; when none is,
they are taken in the order of the sorted class names (numerically for integer labels: the
order of scikit-learn's `classes_` and `predict_proba` columns). The report states the mapping.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxmetrics.report.read import (
    MulticlassTable,
    ReportError,
    Table,
    class_labels,
    cluster_ids,
    is_multiclass,
    load_table,
    read_columns,
    score_column,
)

# A row of class probabilities may miss a sum of 1 by this much: jaxmetrics' own tolerance
# (`jm.multiclass_log_loss`), which rounding to two or three decimals stays within.
ROW_SUM_TOLERANCE = 0.01


def load(
    path: str | Path,
    label: str,
    scores: list[str],
    *,
    positive: str | None = None,
    cluster: str | None = None,
    multiclass: bool = False,
    group: str | None = None,
) -> Table | MulticlassTable:
    """The binary `Table` or, for --multiclass or a label column of more than two classes
    (without --positive), the `MulticlassTable` of a file (--group is for a binary one)."""
    path = Path(path)
    columns = read_columns(path, label, scores, cluster=cluster, group=group)
    if not multiclass and (positive is not None or not is_multiclass(columns[label])):
        return load_table(
            path, label, scores, positive=positive, cluster=cluster, group=group, columns=columns
        )
    if group is not None:
        raise ReportError(f"--group {group!r}: the by-group section is for a binary report")
    labels, classes = class_labels(columns[label], label, path)
    if len(classes) < 3:
        listed = ", ".join(classes)
        raise ReportError(
            f"{path}: column {label!r} has {len(classes)} class{'es' if len(classes) > 1 else ''}"
            f" ({listed}); --multiclass needs at least 3 (drop it for the binary report)"
        )
    clusters = None if cluster is None else cluster_ids(columns[cluster], cluster, path)
    order = class_columns(classes, scores, label)
    probs = np.stack([score_column(columns[name], name, path) for name in order], axis=-1)
    check_probabilities(path, probs, order, columns[label].where)
    return MulticlassTable(labels, probs, classes, order, clusters)


def class_columns(classes: tuple[str, ...], scores: list[str], label: str) -> tuple[str, ...]:
    """The score column of each class (see the module's docstring)."""
    listed = ", ".join(classes)
    named = [name for name in scores if name in classes]
    if len(scores) != len(classes):
        raise ReportError(
            f"column {label!r} has {len(classes)} classes ({listed}): give one --score column "
            f"of probabilities per class; got {len(scores)} ({', '.join(scores)})"
        )
    if not named:
        return tuple(scores)  # in the order of the sorted class names
    if len(named) < len(scores):
        strays = ", ".join(repr(name) for name in scores if name not in classes)
        raise ReportError(
            f"--score {strays}: not a class of column {label!r} ({listed}); name every score "
            "column after its class, or none (they are then taken in the order of the sorted "
            "class names)"
        )
    return tuple(sorted(scores, key=classes.index))


def check_probabilities(path: Path, probs: np.ndarray, columns: tuple[str, ...], where) -> None:
    """Each cell in [0, 1] and each row summing to 1 within `ROW_SUM_TOLERANCE`; the first bad
    cell, or else the first bad row, is named (`where(row)`: its line or index)."""
    outside = (probs < 0) | (probs > 1)
    if outside.any():
        row, column = (int(i) for i in np.argwhere(outside)[0])
        raise ReportError(
            f"{path}: column {columns[column]!r}, {where(row)}: {float(probs[row, column])} is not "
            "a probability in [0, 1] (the multiclass report reads one probability per class)"
        )
    totals = probs.sum(axis=-1)
    off = np.abs(totals - 1) > ROW_SUM_TOLERANCE
    if off.any():
        row = int(np.argmax(off))
        raise ReportError(
            f"{path}: {where(row)}: the class probabilities ({', '.join(columns)}) sum to "
            f"{totals[row]:.6g}; each row must sum to 1 within {ROW_SUM_TOLERANCE}"
        )
