"""Studies: one config, several variants, every variant re-timed on several link profiles — one table.

``fedbw study FILE`` reads a study file (:mod:`fedbw.config.study`), runs each variant once (:mod:`.run`), lays the
bytes each round exchanged on every profile of the study (:mod:`.retime`) and writes the table as
JSON, Markdown and a bar chart (:mod:`fedbw.report.study`); what it produces is
:mod:`fedbw.results.study`. experiments/privacy-overhead.toml is the example.
"""

from fedbw.config.study import Study, load_study
from fedbw.results.study import StudyResult, StudyRow
from fedbw.studies.run import run_study

__all__ = ["Study", "StudyResult", "StudyRow", "load_study", "run_study"]
