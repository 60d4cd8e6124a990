"""The gate's other modes: LLM-assisted labels, label-free checks, sequential runs."""
