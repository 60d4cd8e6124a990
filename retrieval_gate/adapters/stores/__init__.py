"""Vector-store retrievers (Qdrant, Chroma, LanceDB, pgvector) and their embeddings."""
