"""Differentiable surrogates of jaxmetrics' metrics, as optax-style training losses."""

from jaxmetrics._src.losses.batches import balanced_batches as balanced_batches
from jaxmetrics._src.losses.listwise import approx_ndcg_loss as approx_ndcg_loss
from jaxmetrics._src.losses.listwise import listnet_loss as listnet_loss
from jaxmetrics._src.losses.partial_auc import partial_auc_loss as partial_auc_loss
from jaxmetrics._src.losses.partial_auc import two_way_partial_auc_loss as two_way_partial_auc_loss
from jaxmetrics._src.losses.ranking import AucMarginState as AucMarginState
from jaxmetrics._src.losses.ranking import auc_margin_loss as auc_margin_loss
from jaxmetrics._src.losses.ranking import auc_margin_objective as auc_margin_objective
from jaxmetrics._src.losses.ranking import pairwise_auc_loss as pairwise_auc_loss
from jaxmetrics._src.losses.ranking import (
    recall_at_precision_objective as recall_at_precision_objective,
)
from jaxmetrics._src.losses.ranking import smooth_ap_loss as smooth_ap_loss
from jaxmetrics._src.losses.soft import soft_counts as soft_counts
from jaxmetrics._src.losses.soft import soft_f_beta_loss as soft_f_beta_loss
from jaxmetrics._src.losses.soft import soft_precision as soft_precision
from jaxmetrics._src.losses.soft import soft_recall as soft_recall
from jaxmetrics._src.losses.stateful import SoapState as SoapState
from jaxmetrics._src.losses.stateful import compositional_auc_loss as compositional_auc_loss
from jaxmetrics._src.losses.stateful import multilabel_auc_margin_loss as multilabel_auc_margin_loss
from jaxmetrics._src.losses.stateful import soap_loss as soap_loss

__all__ = [
    "AucMarginState",
    "SoapState",
    "approx_ndcg_loss",
    "auc_margin_loss",
    "auc_margin_objective",
    "balanced_batches",
    "compositional_auc_loss",
    "listnet_loss",
    "multilabel_auc_margin_loss",
    "pairwise_auc_loss",
    "partial_auc_loss",
    "recall_at_precision_objective",
    "smooth_ap_loss",
    "soap_loss",
    "soft_counts",
    "soft_f_beta_loss",
    "soft_precision",
    "soft_recall",
    "two_way_partial_auc_loss",
]
