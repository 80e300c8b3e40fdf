"""The subcommands of harness/perfstudy, one module each (add_arguments, main, a one-line docstring); they never import each other."""
