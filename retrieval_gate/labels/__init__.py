"""Labels: the queue of unjudged documents for annotators, and merging their judgments back."""
