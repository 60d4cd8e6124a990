"""What the labelled set can detect: the spread, the figures, power and claims."""
