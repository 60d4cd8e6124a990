"""The pieces every layer shares: ids, runs, qrels, judgments, the data model, wording, files."""
