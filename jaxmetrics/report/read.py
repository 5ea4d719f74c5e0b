"""Reading the user's table: CSV/TSV, .npz or .parquet into labels and float64 score columns.

numpy and the standard library only, so a bad file fails fast, before any JAX work. Every problem
raises `ReportError` with one line naming the file, the column and the line (CSV) or index (.npz,
.parquet) where it was found.

A label is missing when its cell is blank, null (Parquet) or NaN, or reads NA, N/A, NaN or null
(any case): the marks that R, numpy and databases write for a missing value. Any other text is a
class name, "none" included (classes "none"/"disease" are common); `--positive NA` still makes
NA the positive class.
"""

from __future__ import annotations

import csv
import io
import math
import zipfile
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

# The largest float32: the library's jitted paths compute in float32, where a larger score is inf.
FLOAT32_MAX = float(np.finfo(np.float32).max)
_TRUE = {"1", "1.0", "true", "t", "yes", "y"}
_FALSE = {"0", "0.0", "false", "f", "no", "n"}
_MISSING = {"", "nan", "na", "n/a", "null"}  # compared in lower case
# csv's default field limit (131,072 characters) would fail long fields with csv's own error; a
# long field is read and then judged like any other.
csv.field_size_limit(2**31 - 1)


class ReportError(Exception):
    """A problem with the user's input or options: printed as one line, exit status 2."""


MAX_GROUPS = 50  # --group: more is an error (a table of one row per group stops being read)


class Table(NamedTuple):
    """Labels (int32, 1 = positive) and each score column (float64), in the file's order, and
    the cluster and group of each row (--cluster, --group: any values, as text) or None."""

    labels: np.ndarray
    models: dict[str, np.ndarray]
    clusters: np.ndarray | None = None
    groups: np.ndarray | None = None


class MulticlassTable(NamedTuple):
    """Class indices (int32) into `classes`, the probability of each class (float64 [n, C],
    its columns in the order of `classes`), the class names (sorted), the score column read for
    each class, and the cluster of each row or None."""

    labels: np.ndarray
    probs: np.ndarray
    classes: tuple[str, ...]
    columns: tuple[str, ...]
    clusters: np.ndarray | None = None


class _Column(NamedTuple):
    """One column's cells and how to name the position of each (for messages)."""

    cells: list | np.ndarray
    lines: list[int] | None  # CSV: the file line of each cell
    unit: str  # otherwise "index" (.npz) or "row" (.parquet)

    def where(self, index: int) -> str:
        return f"line {self.lines[index]}" if self.lines is not None else f"{self.unit} {index}"


def _show(cell: object, limit: int = 40) -> str:
    """A cell as it appears in a message: quoted, and cut short if long."""
    text = repr(cell)
    return text if len(text) <= limit else f"{text[: limit - 5]}...' ({len(str(cell))} characters)"


def _duplicates_check(path: Path, header: list[str], wanted: list[str]) -> None:
    for name in dict.fromkeys(wanted):
        fields = [i + 1 for i, h in enumerate(header) if h == name]
        if len(fields) > 1:
            listed = ", ".join(str(f) for f in fields)
            raise ReportError(
                f"{path}: column {name!r} appears {len(fields)} times in the "
                f"header (fields {listed}); rename the copies"
            )


def _delimiter(path: Path, sample: str) -> str:
    if path.suffix.lower() in (".tsv", ".tab"):
        return "\t"
    if path.suffix.lower() == ".csv":
        return ","
    try:
        return csv.Sniffer().sniff(sample, delimiters=",\t;").delimiter
    except csv.Error:
        return ","


def _read_text(path: Path, wanted: list[str]) -> dict[str, _Column]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not a UTF-8 text file (CSV/TSV, .npz or .parquet)") from None
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(path, text[:4096]))
    try:
        header = [name.strip() for name in next(reader, [])]
        if not header:
            raise ReportError(f"{path}: the file is empty (no header row)")
        _duplicates_check(path, header, wanted)
        _missing_check(path, wanted, header)
        names = list(dict.fromkeys(wanted))
        positions = [header.index(name) for name in names]
        cells: list[list[str]] = [[] for _ in names]
        lines: list[int] = []  # shared by the columns: the file line of each kept row
        for row in reader:
            if not "".join(row).strip():
                continue  # a blank line
            if len(row) != len(header):
                raise ReportError(
                    f"{path}: line {reader.line_num} has {len(row)} fields, the header has "
                    f"{len(header)}"
                )
            lines.append(reader.line_num)
            for column, position in zip(cells, positions):
                column.append(row[position])
    except csv.Error as error:
        raise ReportError(f"{path}: line {reader.line_num}: not valid CSV ({error})") from None
    return {name: _Column(column, lines, "line") for name, column in zip(names, cells)}


def _read_npz(path: Path, wanted: list[str]) -> dict[str, _Column]:
    broken = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)
    try:
        data = np.load(path, allow_pickle=False)
    except broken as error:
        raise ReportError(f"{path}: not a readable .npz file ({error})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ReportError(
            f"{path}: holds a single array (.npy), not named arrays (.npz); save "
            f"the columns with numpy.savez(path, label=..., score=...)"
        )
    with data:
        _missing_check(path, wanted, data.files)
        columns = {}
        for name in dict.fromkeys(wanted):
            try:
                array = data[name]
            except broken as error:
                raise ReportError(f"{path}: array {name!r} is unreadable ({error})") from None
            if array.ndim != 1:
                raise ReportError(
                    f"{path}: array {name!r} has shape {array.shape}; each column "
                    f"must be a 1-D array"
                )
            columns[name] = _Column(array, None, "index")
    return columns


def _read_parquet(path: Path, wanted: list[str]) -> dict[str, _Column]:
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise ReportError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        table = parquet.read_table(path)
    except Exception as error:  # pyarrow raises its own ArrowInvalid/ArrowIOError family
        raise ReportError(f"{path}: not a readable Parquet file ({error})") from None
    _duplicates_check(path, table.column_names, wanted)
    _missing_check(path, wanted, table.column_names)
    return {name: _Column(table.column(name).to_pylist(), None, "row") for name in wanted}


def _missing_check(path: Path, wanted: list[str], available: list[str]) -> None:
    for name in wanted:
        if name not in available:
            listed = ", ".join(repr(c) for c in available) or "none"
            raise ReportError(f"{path}: no column {name!r} (columns: {listed})")


def _label_texts(column: _Column) -> np.ndarray:
    cells = column.cells
    if isinstance(cells, np.ndarray):
        return cells.astype(str)
    # a Parquet null is None: missing, not the text "None"
    return np.array(["" if cell is None else cell for cell in cells], dtype=str)


def _labels(column: _Column, name: str, path: Path, positive: str | None) -> np.ndarray:
    """0/1 labels; the first problem in file order is the one reported."""
    values, first_row, inverse = np.unique(
        _label_texts(column), return_index=True, return_inverse=True
    )
    stripped = [str(v).strip() for v in values]
    problems = []  # (row, message) for each distinct bad value
    code = np.zeros(len(values), np.int32)
    negatives = []
    for k, text in enumerate(stripped):
        if text.lower() in _MISSING and text != positive:
            problems.append(
                (
                    first_row[k],
                    f"label is missing ({_show(text)}); every row needs one (blank cells and "
                    "NA, N/A, NaN, null are read as missing)",
                )
            )
        elif positive is None:
            if text.lower() in _TRUE:
                code[k] = 1
            elif text.lower() not in _FALSE:
                problems.append(
                    (
                        first_row[k],
                        f"label {_show(text)} is not 0/1 or true/false (name the "
                        "positive class with --positive)",
                    )
                )
        elif text == positive:
            code[k] = 1
        else:
            negatives.append((first_row[k], text))
    # the negative class is the first other name in the file; a later second one is a third class
    negatives.sort()
    if len({text for _, text in negatives}) > 1:
        negative = negatives[0][1]
        row, third = next((row, text) for row, text in negatives if text != negative)
        problems.append(
            (
                row,
                f"label {_show(third)} is a third class (positive {positive!r}, negative "
                f"{negative!r})",
            )
        )
    if problems:
        row, message = min(problems, key=lambda problem: problem[0])
        raise ReportError(f"{path}: column {name!r}, {column.where(int(row))}: {message}")
    labels = code[inverse.reshape(-1)]
    present = set(np.unique(labels).tolist())
    if len(present) < 2:
        only = "positive" if present == {1} else "negative"
        raise ReportError(
            f"{path}: column {name!r}: only one class present (all {len(labels)} "
            f"rows are {only}); ROC AUC and precision need both"
        )
    return labels


def _class_name(text: str) -> str:
    """A class name: the stripped cell, an integer-valued number as that integer ("2.0": "2")."""
    try:
        value = float(text)
    except ValueError:
        return text
    return str(int(value)) if value.is_integer() else text


def is_multiclass(column: _Column) -> bool:
    """Whether a label column holds more than two classes: more than two distinct names, not
    all of them the 0/1 or true/false marks that the binary report reads as two classes."""
    names = {str(text).strip() for text in np.unique(_label_texts(column))}
    names = {name for name in names if name.lower() not in _MISSING}
    if all(name.lower() in _TRUE | _FALSE for name in names):
        return False
    return len({_class_name(name) for name in names}) > 2


def class_labels(column: _Column, name: str, path: Path) -> tuple[np.ndarray, tuple[str, ...]]:
    """Class indices (int32) into the sorted class names (numerically when every name is an
    integer, else as text), and those names; a missing label is an error, as in `_labels`."""
    values, first_row, inverse = np.unique(
        _label_texts(column), return_index=True, return_inverse=True
    )
    stripped = [str(value).strip() for value in values]
    missing = [(first_row[k], text) for k, text in enumerate(stripped) if text.lower() in _MISSING]
    if missing:
        row, text = min(missing)
        raise ReportError(
            f"{path}: column {name!r}, {column.where(int(row))}: label is missing ({_show(text)}); "
            "every row needs one (blank cells and NA, N/A, NaN, null are read as missing)"
        )
    names = [_class_name(text) for text in stripped]
    numeric = all(n.removeprefix("-").isdigit() for n in names)
    classes = tuple(sorted(set(names), key=int if numeric else str))
    code = {c: i for i, c in enumerate(classes)}
    return np.array([code[n] for n in names], np.int32)[inverse.reshape(-1)], classes


def score_column(column: _Column, name: str, path: Path) -> np.ndarray:
    """A score column as float64, every cell a finite number that float32 can hold."""
    cells = column.cells
    try:
        scores = np.asarray(cells, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        for i, cell in enumerate(cells):  # find the first cell that is not a number
            try:
                float(cell)
            except (TypeError, ValueError, OverflowError):
                empty = cell is None or not str(cell).strip()
                what = "is empty" if empty else f"{_show(cell)} is not a number"
                raise ReportError(
                    f"{path}: column {name!r}, {column.where(i)}: score {what}"
                ) from None
        raise  # numpy refused what Python reads: not expected
    if scores.ndim != 1:
        raise ReportError(f"{path}: column {name!r} does not hold one number per row")
    bad = ~np.isfinite(scores) | (np.abs(scores) > FLOAT32_MAX)
    if bad.any():
        i = int(np.argmax(bad))
        shown = _show(cells[i] if isinstance(cells, list) else scores[i].item())
        problem = (
            "is not finite"
            if not math.isfinite(scores[i])
            else f"overflows float32 (magnitude above {FLOAT32_MAX:.4g})"
        )
        raise ReportError(f"{path}: column {name!r}, {column.where(i)}: score {shown} {problem}")
    return scores


def read_columns(
    path: str | Path,
    label: str,
    scores: list[str],
    *,
    cluster: str | None = None,
    group: str | None = None,
) -> dict:
    """The label, score, cluster and group columns of a CSV, TSV, .npz or .parquet file as cells,
    by name, checked for presence, duplicates and equal lengths (values not read yet)."""
    path = Path(path)
    if not scores:
        raise ReportError("give at least one --score column")
    for name in scores:
        if scores.count(name) > 1:
            raise ReportError(f"--score {name!r} is given {scores.count(name)} times")
    if not path.exists():
        raise ReportError(f"{path}: no such file")
    if path.is_dir():
        raise ReportError(f"{path}: is a directory, not a data file")
    wanted = list(dict.fromkeys([label, *scores, *(c for c in (cluster, group) if c)]))
    for option, name in (("--cluster", cluster), ("--group", group)):
        if name == label:
            raise ReportError(f"{option} {name!r} is the label column")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        columns = _read_npz(path, wanted)
    elif suffix == ".parquet":
        columns = _read_parquet(path, wanted)
    else:
        columns = _read_text(path, wanted)
    lengths = {name: len(columns[name].cells) for name in wanted}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{name!r} has {n}" for name, n in lengths.items())
        raise ReportError(f"{path}: columns have different lengths ({listed})")
    if lengths[label] == 0:
        raise ReportError(f"{path}: the table is empty (no data rows)")
    return columns


def cluster_ids(column: _Column, name: str, path: Path, most: int | None = None) -> np.ndarray:
    """The --cluster (or --group) column as stripped text; a blank cell, or more than `most`
    distinct values, is an error."""
    cells = column.cells
    clusters = np.char.strip(
        (cells if isinstance(cells, np.ndarray) else np.array(cells)).astype(str)
    )
    if (clusters == "").any():
        row = int(np.argmax(clusters == ""))
        raise ReportError(f"{path}: column {name!r} has a blank cell (data row {row + 1})")
    if most is not None and np.unique(clusters).size > most:
        raise ReportError(
            f"{path}: column {name!r} has {np.unique(clusters).size} distinct values; --group "
            f"takes at most {most} groups (is it the right column?)"
        )
    return clusters


def load_table(
    path: str | Path,
    label: str,
    scores: list[str],
    *,
    positive: str | None = None,
    cluster: str | None = None,
    group: str | None = None,
    columns: dict | None = None,
) -> Table:
    """Labels and score columns of a CSV, TSV, .npz or .parquet file, checked (`columns`: the
    file's, if `read_columns` read them already)."""
    path = Path(path)
    if columns is None:
        columns = read_columns(path, label, scores, cluster=cluster, group=group)
    labels = _labels(columns[label], label, path, positive)
    clusters = None if cluster is None else cluster_ids(columns[cluster], cluster, path)
    groups = None if group is None else cluster_ids(columns[group], group, path, MAX_GROUPS)
    models = {name: score_column(columns[name], name, path) for name in scores}
    return Table(labels, models, clusters, groups)


DEMO_GROUP_COLUMN = "site"


def demo_data(seed: int = 0, num_samples: int = 4000) -> Table:
    """Two binormal classifiers A and B at 5% prevalence, as probabilities.

    Negatives score N(0, 1); positives N(1.5, 1) for A and N(1.5, 2^2) for B. A wins on ROC AUC
    (0.856 in the population), B, whose positives spread far above the negatives, on average
    precision. Both are mapped to probabilities with A's Bayes posterior,
    sigmoid(1.5 s - 1.125 + logit(0.05)), so A is calibrated and B is not.

    Each row has a site (`DEMO_GROUP_COLUMN`) from a generator of its own (the other columns
    stay those drawn before it was added): north, central or south with chances 0.5, 0.3, 0.2
    for a negative and 0.3, 0.3, 0.4 for a positive, so the prevalence differs between sites
    (3%, 5% and 10% in the population) while the scores do not.
    """
    rng = np.random.default_rng(seed)
    labels = (rng.random(num_samples) < 0.05).astype(np.int32)
    noise = rng.normal(size=(2, num_samples))
    raw = {
        "A": np.where(labels == 1, 1.5 + noise[0], noise[0]),
        "B": np.where(labels == 1, 1.5 + 2.0 * noise[1], noise[1]),
    }
    intercept = -1.125 + math.log(0.05 / 0.95)
    site_rng = np.random.default_rng([seed, 1])
    chance = np.where(labels[:, None] == 1, [0.3, 0.3, 0.4], [0.5, 0.3, 0.2])
    site = (site_rng.random(num_samples)[:, None] > np.cumsum(chance, axis=1)).sum(axis=1)
    return Table(
        labels,
        {name: 1 / (1 + np.exp(-(1.5 * s + intercept))) for name, s in raw.items()},
        groups=np.array(["north", "central", "south"])[np.minimum(site, 2)],
    )


def multiclass_demo_data(seed: int = 0, num_samples: int = 3000) -> MulticlassTable:
    """One classifier of three classes, cats, dogs and foxes (50%, 30% and 20% of the rows).

    Each animal has a two-dimensional feature drawn from N(mean, I), with means (0, 0) for
    cats, (1.5, 0.5) for dogs and (0.5, 1.8) for foxes; the classifier gives the Bayes posterior
    for equal priors, so it ranks as well as possible but overrates the two rarer classes.
    """
    rng = np.random.default_rng(seed)
    classes = ("cat", "dog", "fox")
    means = np.array([[0.0, 0.0], [1.5, 0.5], [0.5, 1.8]])
    labels = rng.choice(3, size=num_samples, p=[0.5, 0.3, 0.2]).astype(np.int32)
    features = means[labels] + rng.normal(size=(num_samples, 2))
    logits = -0.5 * ((features[:, None, :] - means[None]) ** 2).sum(-1)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    return MulticlassTable(labels, probs / probs.sum(-1, keepdims=True), classes, classes)
