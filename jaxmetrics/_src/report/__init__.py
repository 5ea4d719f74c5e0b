"""`jaxmetrics report`: a whole binary-classifier evaluation for a file of labels and scores.

`read` loads and checks the file (numpy and the standard library only, so bad input fails fast,
before JAX starts); `evaluate` computes every number with the library's public functions into
the typed `result.Report` (it imports JAX, so this package leaves it to be imported by name:
`jaxmetrics._src.report.evaluate`); `render` lays it out as text and `plots` draws it;
`command` runs them in order: the text and the JSON first, then the plots, each of which
may fail alone.
"""

from jaxmetrics._src.report.command import run as run
from jaxmetrics._src.report.plots import draw as plots
from jaxmetrics._src.report.read import ReportError as ReportError
from jaxmetrics._src.report.read import Table as Table
from jaxmetrics._src.report.read import demo_data as demo_data
from jaxmetrics._src.report.read import load_table as load_table
from jaxmetrics._src.report.render import render as render
from jaxmetrics._src.report.result import Report as Report
from jaxmetrics._src.report.result import to_json as to_json

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
