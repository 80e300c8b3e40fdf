"""One module per subcommand of harness/perfstudy: add_arguments(parser) and main(args) -> exit
status, and a one-line docstring for the overview. They import pstudy's library modules and
pstudy.common, never each other (tests/harness/test_structure.py checks it)."""
