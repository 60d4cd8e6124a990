"""The subcommands of `retrieval-gate`: each module declares one (`add_parser`) and runs it."""
