"""Statistics: paired tests and multiplicity control, detectability, annotator agreement."""
