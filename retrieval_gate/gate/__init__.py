"""The gate: comparison, slices, diagnostics, the baseline, policy, decision and result."""
