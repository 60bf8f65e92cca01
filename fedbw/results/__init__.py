"""Records every engine writes, and what turns them into tables, plots and reports."""

from fedbw.results.records import ClientRoundRecord, RecordWriter, RoundRecord, StageRecord, load_records

__all__ = ["ClientRoundRecord", "RecordWriter", "RoundRecord", "StageRecord", "load_records"]
