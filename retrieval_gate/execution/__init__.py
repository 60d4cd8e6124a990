"""Running a query set through a retriever: runner, retries, progress, answer cache."""
