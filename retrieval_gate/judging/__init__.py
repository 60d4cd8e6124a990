"""An LLM judge: grading (query, document) pairs, and writing queries from a corpus."""
