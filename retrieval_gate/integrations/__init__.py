"""Where the gate meets other tools: GitHub Actions and the pytest plugin."""
