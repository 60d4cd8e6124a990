"""The command line: the entry point, one module per subcommand, completion and scaffolding."""
