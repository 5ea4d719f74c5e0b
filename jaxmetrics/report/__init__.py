"""`jaxmetrics report`: a whole binary-classifier evaluation for a file of labels and scores.

`read` loads and checks the file (numpy and the standard library only, so bad input fails fast,
before JAX starts); `evaluate` computes every number with the library's public functions into
the typed `result.Report`, the bootstrap in `ranking`, whose programs `programs` keeps between
runs (these import JAX, so this package leaves them to be imported by name:
`jaxmetrics.report.evaluate`); `render` lays it out as text and `plots` draws it; `command`
runs them in order: the text and the JSON first, then the plots, each of which may fail alone.
`cli` is the command line on top.
"""

from jaxmetrics.report.command import run as run
from jaxmetrics.report.plots import draw as plots
from jaxmetrics.report.read import ReportError as ReportError
from jaxmetrics.report.read import Table as Table
from jaxmetrics.report.read import demo_data as demo_data
from jaxmetrics.report.read import load_table as load_table
from jaxmetrics.report.render import render as render
from jaxmetrics.report.result import Report as Report
from jaxmetrics.report.result import to_json as to_json

__all__ = [
    "Report",
    "ReportError",
    "Table",
    "demo_data",
    "load_table",
    "plots",
    "render",
    "run",
    "to_json",
]
