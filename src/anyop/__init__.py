"""anyop: Kubernetes operators in Python on AnyIO structured concurrency, with Kopf's API."""

from anyop._version import __version__
from anyop.errors import (
    AdmissionError,
    HandlerRetriesError,
    HandlerTimeoutError,
    PermanentError,
    TemporaryError,
)

__all__ = [
    "AdmissionError",
    "HandlerRetriesError",
    "HandlerTimeoutError",
    "PermanentError",
    "TemporaryError",
    "__version__",
]
