"""jaxmetrics: exact, batched classification metrics in JAX."""

from jaxmetrics._src.counts import Counts as Counts
from jaxmetrics._src.counts import accuracy as accuracy
from jaxmetrics._src.counts import balanced_accuracy as balanced_accuracy
from jaxmetrics._src.counts import confusion_counts as confusion_counts
from jaxmetrics._src.counts import f_beta as f_beta
from jaxmetrics._src.counts import false_positive_rate as false_positive_rate
from jaxmetrics._src.counts import matthews_corrcoef as matthews_corrcoef
from jaxmetrics._src.counts import precision as precision
from jaxmetrics._src.counts import recall as recall
from jaxmetrics._src.counts import safe_divide as safe_divide
from jaxmetrics._src.counts import specificity as specificity
from jaxmetrics._src.ranking import PrCurve as PrCurve
from jaxmetrics._src.ranking import RocCurve as RocCurve
from jaxmetrics._src.ranking import average_precision as average_precision
from jaxmetrics._src.ranking import precision_at_k as precision_at_k
from jaxmetrics._src.ranking import precision_recall_curve as precision_recall_curve
from jaxmetrics._src.ranking import roc_auc as roc_auc
from jaxmetrics._src.ranking import roc_curve as roc_curve

__version__ = "0.1.0"

__all__ = [
    "Counts",
    "PrCurve",
    "RocCurve",
    "accuracy",
    "average_precision",
    "balanced_accuracy",
    "confusion_counts",
    "f_beta",
    "false_positive_rate",
    "matthews_corrcoef",
    "precision",
    "precision_at_k",
    "precision_recall_curve",
    "recall",
    "roc_auc",
    "roc_curve",
    "safe_divide",
    "specificity",
]
