"""`retrieval-gate lint`: the engine and its rules, one module per rule family."""
