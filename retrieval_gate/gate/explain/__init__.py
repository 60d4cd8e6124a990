"""Why a check moved: diagnostics, the top k's facts, label holes, stage losses."""
