"""GitHub Actions: the environment and event (environment), workflow commands, the fence and
the step summary (workflow), the sticky comment (comments), the ratchet's pull request (pulls),
the REST client they share (api); `python -m retrieval_gate.integrations.github ratchet-pr`
(__main__)."""
