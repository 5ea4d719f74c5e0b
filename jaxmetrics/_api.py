"""Every public name of `jaxmetrics`, imported at once (JAX with them): the package's
`__getattr__` imports this module on the first use of one of them."""

# the submodules are attributes of the package: `jm.losses.pairwise_auc_loss` works after
# `import jaxmetrics as jm` alone
from jaxmetrics import losses as losses
from jaxmetrics import streaming as streaming
from jaxmetrics._src.core.kernels import xla_kernels as xla_kernels
from jaxmetrics._src.core.numerics import safe_divide as safe_divide
from jaxmetrics._src.metrics.agreement import cohen_kappa as cohen_kappa
from jaxmetrics._src.metrics.agreement import matthews_corrcoef as matthews_corrcoef
from jaxmetrics._src.metrics.binned_calibration import HosmerLemeshowTest as HosmerLemeshowTest
from jaxmetrics._src.metrics.binned_calibration import (
    debiased_calibration_error as debiased_calibration_error,
)
from jaxmetrics._src.metrics.binned_calibration import (
    hosmer_lemeshow_test as hosmer_lemeshow_test,
)
from jaxmetrics._src.metrics.budget import BudgetChoice as BudgetChoice
from jaxmetrics._src.metrics.budget import budget_threshold as budget_threshold
from jaxmetrics._src.metrics.calibration import brier_score as brier_score
from jaxmetrics._src.metrics.calibration import log_loss as log_loss
from jaxmetrics._src.metrics.counts import Counts as Counts
from jaxmetrics._src.metrics.counts import confusion_counts as confusion_counts
from jaxmetrics._src.metrics.curves import PrCurve as PrCurve
from jaxmetrics._src.metrics.curves import RocCurve as RocCurve
from jaxmetrics._src.metrics.curves import precision_recall_curve as precision_recall_curve
from jaxmetrics._src.metrics.curves import roc_curve as roc_curve
from jaxmetrics._src.metrics.decision import DecisionCurve as DecisionCurve
from jaxmetrics._src.metrics.decision import decision_curve as decision_curve
from jaxmetrics._src.metrics.decision import net_benefit as net_benefit
from jaxmetrics._src.metrics.fairness import (
    demographic_parity_difference as demographic_parity_difference,
)
from jaxmetrics._src.metrics.fairness import demographic_parity_ratio as demographic_parity_ratio
from jaxmetrics._src.metrics.fairness import (
    equal_opportunity_difference as equal_opportunity_difference,
)
from jaxmetrics._src.metrics.fairness import equal_opportunity_ratio as equal_opportunity_ratio
from jaxmetrics._src.metrics.fairness import equalized_odds_difference as equalized_odds_difference
from jaxmetrics._src.metrics.fairness import equalized_odds_ratio as equalized_odds_ratio
from jaxmetrics._src.metrics.fairness import selection_rate as selection_rate
from jaxmetrics._src.metrics.folds import over_folds as over_folds
from jaxmetrics._src.metrics.groups import ByGroup as ByGroup
from jaxmetrics._src.metrics.groups import by_group as by_group
from jaxmetrics._src.metrics.groups import by_group_bootstrap as by_group_bootstrap
from jaxmetrics._src.metrics.label_ranking import coverage_error as coverage_error
from jaxmetrics._src.metrics.label_ranking import (
    label_ranking_average_precision as label_ranking_average_precision,
)
from jaxmetrics._src.metrics.label_ranking import label_ranking_loss as label_ranking_loss
from jaxmetrics._src.metrics.multiclass import ClassificationReport as ClassificationReport
from jaxmetrics._src.metrics.multiclass import classification_report as classification_report
from jaxmetrics._src.metrics.multiclass import confusion_matrix as confusion_matrix
from jaxmetrics._src.metrics.multiclass import one_vs_rest as one_vs_rest
from jaxmetrics._src.metrics.multiclass_calibration import (
    multiclass_brier_score as multiclass_brier_score,
)
from jaxmetrics._src.metrics.multiclass_calibration import (
    multiclass_log_loss as multiclass_log_loss,
)
from jaxmetrics._src.metrics.multiclass_ranking import (
    multiclass_average_precision as multiclass_average_precision,
)
from jaxmetrics._src.metrics.multiclass_ranking import multiclass_roc_auc as multiclass_roc_auc
from jaxmetrics._src.metrics.multiclass_ranking import top_k_accuracy as top_k_accuracy
from jaxmetrics._src.metrics.operating_points import OperatingPoint as OperatingPoint
from jaxmetrics._src.metrics.operating_points import RocBand as RocBand
from jaxmetrics._src.metrics.operating_points import SensitivitiesAt as SensitivitiesAt
from jaxmetrics._src.metrics.operating_points import (
    closest_to_corner_threshold as closest_to_corner_threshold,
)
from jaxmetrics._src.metrics.operating_points import roc_band as roc_band
from jaxmetrics._src.metrics.operating_points import (
    sensitivity_at_specificity as sensitivity_at_specificity,
)
from jaxmetrics._src.metrics.operating_points import (
    specificity_at_sensitivity as specificity_at_sensitivity,
)
from jaxmetrics._src.metrics.operating_points import youden_threshold as youden_threshold
from jaxmetrics._src.metrics.partial_auc import partial_roc_auc as partial_roc_auc
from jaxmetrics._src.metrics.ranking import average_precision as average_precision
from jaxmetrics._src.metrics.ranking import precision_at_k as precision_at_k
from jaxmetrics._src.metrics.ranking import roc_auc as roc_auc
from jaxmetrics._src.metrics.rates import accuracy as accuracy
from jaxmetrics._src.metrics.rates import balanced_accuracy as balanced_accuracy
from jaxmetrics._src.metrics.rates import f_beta as f_beta
from jaxmetrics._src.metrics.rates import false_positive_rate as false_positive_rate
from jaxmetrics._src.metrics.rates import precision as precision
from jaxmetrics._src.metrics.rates import recall as recall
from jaxmetrics._src.metrics.rates import specificity as specificity
from jaxmetrics._src.metrics.recalibration import Estimate as Estimate
from jaxmetrics._src.metrics.recalibration import SpiegelhalterTest as SpiegelhalterTest
from jaxmetrics._src.metrics.recalibration import calibration_intercept as calibration_intercept
from jaxmetrics._src.metrics.recalibration import calibration_slope as calibration_slope
from jaxmetrics._src.metrics.recalibration import spiegelhalter_test as spiegelhalter_test
from jaxmetrics._src.metrics.regression import mean_absolute_error as mean_absolute_error
from jaxmetrics._src.metrics.regression import r2_score as r2_score
from jaxmetrics._src.metrics.regression import root_mean_squared_error as root_mean_squared_error
from jaxmetrics._src.metrics.reliability import ReliabilityBins as ReliabilityBins
from jaxmetrics._src.metrics.reliability import ReliabilityTable as ReliabilityTable
from jaxmetrics._src.metrics.reliability import (
    expected_calibration_error as expected_calibration_error,
)
from jaxmetrics._src.metrics.reliability import reliability_bins as reliability_bins
from jaxmetrics._src.metrics.reliability import reliability_table as reliability_table
from jaxmetrics._src.metrics.retrieval import average_precision_at_k as average_precision_at_k
from jaxmetrics._src.metrics.retrieval import hit_rate_at_k as hit_rate_at_k
from jaxmetrics._src.metrics.retrieval import ndcg as ndcg
from jaxmetrics._src.metrics.retrieval import query_mean as query_mean
from jaxmetrics._src.metrics.retrieval import r_precision as r_precision
from jaxmetrics._src.metrics.retrieval import recall_at_k as recall_at_k
from jaxmetrics._src.metrics.retrieval import reciprocal_rank as reciprocal_rank
from jaxmetrics._src.metrics.thresholds import ThresholdChoice as ThresholdChoice
from jaxmetrics._src.metrics.thresholds import bayes_threshold as bayes_threshold
from jaxmetrics._src.metrics.thresholds import max_f_beta as max_f_beta
from jaxmetrics._src.metrics.thresholds import min_expected_cost as min_expected_cost
from jaxmetrics._src.metrics.thresholds import precision_at_recall as precision_at_recall
from jaxmetrics._src.metrics.thresholds import recall_at_precision as recall_at_precision
from jaxmetrics._src.stats.bootstrap import BootstrapResult as BootstrapResult
from jaxmetrics._src.stats.bootstrap import bootstrap as bootstrap
from jaxmetrics._src.stats.delong import DeLong as DeLong
from jaxmetrics._src.stats.delong import DeLongTest as DeLongTest
from jaxmetrics._src.stats.delong import delong as delong
from jaxmetrics._src.stats.delong import delong_test as delong_test
from jaxmetrics._src.stats.delong_unpaired import DeLongUnpairedTest as DeLongUnpairedTest
from jaxmetrics._src.stats.delong_unpaired import delong_test_unpaired as delong_test_unpaired
from jaxmetrics._src.stats.intervals import agresti_coull_interval as agresti_coull_interval
from jaxmetrics._src.stats.intervals import clopper_pearson_interval as clopper_pearson_interval
from jaxmetrics._src.stats.intervals import (
    hanley_mcneil_standard_error as hanley_mcneil_standard_error,
)
from jaxmetrics._src.stats.intervals import wilson_interval as wilson_interval
from jaxmetrics._src.stats.metric_contract import estimate_in_loop as estimate_in_loop
from jaxmetrics._src.stats.paired import BootstrapTest as BootstrapTest
from jaxmetrics._src.stats.paired import PairedDifference as PairedDifference
from jaxmetrics._src.stats.paired import UnpairedDifference as UnpairedDifference
from jaxmetrics._src.stats.paired import bootstrap_test as bootstrap_test
from jaxmetrics._src.stats.paired import paired_difference as paired_difference
from jaxmetrics._src.stats.paired import unpaired_difference as unpaired_difference
from jaxmetrics._src.stats.power import SampleSize as SampleSize
from jaxmetrics._src.stats.power import auc_power as auc_power
from jaxmetrics._src.stats.power import auc_sample_size as auc_sample_size
from jaxmetrics._src.stats.power import delong_power as delong_power
from jaxmetrics._src.stats.power import delong_sample_size as delong_sample_size
from jaxmetrics._src.stats.resampling import resample_weights as resample_weights
from jaxmetrics._src.stats.venkatraman import VenkatramanTest as VenkatramanTest
from jaxmetrics._src.stats.venkatraman import venkatraman_test as venkatraman_test
from jaxmetrics._src.stats.venkatraman import venkatraman_test_unpaired as venkatraman_test_unpaired

__all__ = [
    "BootstrapResult",
    "BootstrapTest",
    "BudgetChoice",
    "ByGroup",
    "ClassificationReport",
    "Counts",
    "DeLong",
    "DeLongTest",
    "DeLongUnpairedTest",
    "DecisionCurve",
    "Estimate",
    "HosmerLemeshowTest",
    "OperatingPoint",
    "PairedDifference",
    "PrCurve",
    "ReliabilityBins",
    "ReliabilityTable",
    "RocBand",
    "RocCurve",
    "SampleSize",
    "SensitivitiesAt",
    "SpiegelhalterTest",
    "ThresholdChoice",
    "UnpairedDifference",
    "VenkatramanTest",
    "accuracy",
    "agresti_coull_interval",
    "auc_power",
    "auc_sample_size",
    "average_precision",
    "average_precision_at_k",
    "balanced_accuracy",
    "bayes_threshold",
    "bootstrap",
    "bootstrap_test",
    "brier_score",
    "budget_threshold",
    "by_group",
    "by_group_bootstrap",
    "calibration_intercept",
    "calibration_slope",
    "classification_report",
    "clopper_pearson_interval",
    "closest_to_corner_threshold",
    "cohen_kappa",
    "confusion_counts",
    "confusion_matrix",
    "coverage_error",
    "debiased_calibration_error",
    "decision_curve",
    "delong",
    "delong_power",
    "delong_sample_size",
    "delong_test",
    "delong_test_unpaired",
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equal_opportunity_difference",
    "equal_opportunity_ratio",
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "estimate_in_loop",
    "expected_calibration_error",
    "f_beta",
    "false_positive_rate",
    "hanley_mcneil_standard_error",
    "hit_rate_at_k",
    "hosmer_lemeshow_test",
    "label_ranking_average_precision",
    "label_ranking_loss",
    "log_loss",
    "losses",
    "matthews_corrcoef",
    "max_f_beta",
    "mean_absolute_error",
    "min_expected_cost",
    "multiclass_average_precision",
    "multiclass_brier_score",
    "multiclass_log_loss",
    "multiclass_roc_auc",
    "ndcg",
    "net_benefit",
    "one_vs_rest",
    "over_folds",
    "paired_difference",
    "partial_roc_auc",
    "precision",
    "precision_at_k",
    "precision_at_recall",
    "precision_recall_curve",
    "query_mean",
    "r2_score",
    "r_precision",
    "recall",
    "recall_at_k",
    "recall_at_precision",
    "reciprocal_rank",
    "reliability_bins",
    "reliability_table",
    "resample_weights",
    "roc_auc",
    "roc_band",
    "roc_curve",
    "root_mean_squared_error",
    "safe_divide",
    "selection_rate",
    "sensitivity_at_specificity",
    "specificity",
    "specificity_at_sensitivity",
    "spiegelhalter_test",
    "streaming",
    "top_k_accuracy",
    "unpaired_difference",
    "venkatraman_test",
    "venkatraman_test_unpaired",
    "wilson_interval",
    "xla_kernels",
    "youden_threshold",
]
