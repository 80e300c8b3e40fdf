"""The one error type the harness reports to the user: a one-line message and exit status 2."""


class StudyError(Exception):
    """Bad input (a config, a results directory, an option): printed as one line, exit 2.

    The message should name the file and, where there is one, the key: "FILE: KEY: problem".
    """

