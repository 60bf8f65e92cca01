"""The one rendering layer: everything a person reads or looks at — terminal tables, plots, study pages.

Engines, studies and the runner return data (records, results); only this package and the CLI turn it
into text and pictures. :mod:`.format` formats numbers, :mod:`.tables` builds Rich tables, :mod:`.terminal`
prints what each command answers, :mod:`.plots` draws a run's PNGs, :mod:`.study` writes a study's table,
page and chart, :mod:`.app_run` prints a ``fedbw emulate --app`` run.
"""
