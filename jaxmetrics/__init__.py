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
from jaxmetrics._src.intervals import DeLong as DeLong
from jaxmetrics._src.intervals import DeLongTest as DeLongTest
from jaxmetrics._src.intervals import agresti_coull_interval as agresti_coull_interval
from jaxmetrics._src.intervals import clopper_pearson_interval as clopper_pearson_interval
from jaxmetrics._src.intervals import delong as delong
from jaxmetrics._src.intervals import delong_test as delong_test
from jaxmetrics._src.intervals import hanley_mcneil_standard_error as hanley_mcneil_standard_error
from jaxmetrics._src.intervals import wilson_interval as wilson_interval
from jaxmetrics._src.ranking import PrCurve as PrCurve
from jaxmetrics._src.ranking import RocCurve as RocCurve
from jaxmetrics._src.ranking import average_precision as average_precision
from jaxmetrics._src.ranking import precision_at_k as precision_at_k
from jaxmetrics._src.ranking import precision_recall_curve as precision_recall_curve
from jaxmetrics._src.ranking import roc_auc as roc_auc
from jaxmetrics._src.ranking import roc_curve as roc_curve
from jaxmetrics._src.resampling import BootstrapResult as BootstrapResult
from jaxmetrics._src.resampling import PairedDifference as PairedDifference
from jaxmetrics._src.resampling import bootstrap as bootstrap
from jaxmetrics._src.resampling import paired_difference as paired_difference
from jaxmetrics._src.resampling import resample_weights as resample_weights

__version__ = "0.1.0"

__all__ = [
    "BootstrapResult",
    "Counts",
    "DeLong",
    "DeLongTest",
    "PairedDifference",
    "PrCurve",
    "RocCurve",
    "accuracy",
    "agresti_coull_interval",
    "average_precision",
    "balanced_accuracy",
    "bootstrap",
    "clopper_pearson_interval",
    "confusion_counts",
    "delong",
    "delong_test",
    "f_beta",
    "false_positive_rate",
    "hanley_mcneil_standard_error",
    "matthews_corrcoef",
    "paired_difference",
    "precision",
    "precision_at_k",
    "precision_recall_curve",
    "recall",
    "resample_weights",
    "roc_auc",
    "roc_curve",
    "safe_divide",
    "specificity",
    "wilson_interval",
]
