"""The baseline file: its record, JSON document, top-k side file and provenance."""
