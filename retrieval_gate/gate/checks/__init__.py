"""The comparison of two records, check by check: slices, tests, verdicts, the family."""
