"""The one exception type the commands raise for a problem the user can fix."""


class CourseError(Exception):
    """A clear message for the user and the exit code `course` should return.

    Exit code 2 means "the request or the repository is wrong" (unknown lesson,
    a lesson that is not built yet, a malformed exercise region, ...).
    """

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
