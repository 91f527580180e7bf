"""ctorch's exception classes: one per C status (``code``), each also the
built-in exception Python code expects for it (InvalidArgumentError is a
ValueError, TorchError a RuntimeError, ...), and the status -> class table.
Standard library only; _lib.py raises them from statuses."""

import errno
import os
import re
from typing import Optional

from ._capi import (CT_ERR_INVALID_ARGUMENT, CT_ERR_TYPE, CT_ERR_INDEX, CT_ERR_NOT_FOUND,
                    CT_ERR_IO, CT_ERR_OUT_OF_MEMORY, CT_ERR_NOT_SUPPORTED, CT_ERR_TORCH,
                    CT_ERR_CALLBACK, CT_ERR_INTERNAL, CT_ERR_TIMEOUT)

__all__ = ["Error", "InvalidArgumentError", "IntRangeError", "CTorchTypeError",
           "CTorchIndexError", "NotFoundError", "CTorchFileNotFoundError", "CTorchIOError",
           "CTorchMemoryError", "NotSupportedError", "TorchError", "ItemError", "CallbackError",
           "InternalError", "CTorchTimeoutError", "LibraryNotFoundError", "ERRORS"]

_C_FUNCTION = re.compile(r"(ct_[a-z0-9_]+): ")


class Error(Exception):
    """Base class of every error raised by ctorch.

    ``code`` is the C status (``CT_ERR_*``), ``message`` the text of
    ``ct_last_error()`` (first line short; C++ detail such as a TorchScript
    traceback may follow) without its leading C function name, which is
    ``function`` (``"ct_module_load"``; None for errors raised in Python)."""

    code: Optional[int] = None
    function: Optional[str] = None

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        m = _C_FUNCTION.match(message)
        if m:
            self.function = m.group(1)
            message = message[m.end():]
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgumentError(Error, ValueError):
    code = CT_ERR_INVALID_ARGUMENT


class IntRangeError(InvalidArgumentError, OverflowError):
    """A Python int that does not fit the C integer type it is passed as,
    caught before ctypes would truncate it (see int_arg). Also an
    OverflowError, as Python's own int conversions raise."""


class CTorchTypeError(Error, TypeError):
    code = CT_ERR_TYPE


class CTorchIndexError(Error, IndexError):
    code = CT_ERR_INDEX


class NotFoundError(Error, LookupError):
    code = CT_ERR_NOT_FOUND


class CTorchFileNotFoundError(NotFoundError, FileNotFoundError):
    """A file that does not exist (CT_ERR_NOT_FOUND from a loader): also the
    built-in FileNotFoundError (an OSError, errno ENOENT), as torch.load raises."""

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        Error.__init__(self, message, code)
        self.errno = errno.ENOENT
        self.strerror = os.strerror(errno.ENOENT)
        m = re.search(r"'([^']*)'", self.message)
        self.filename = m.group(1) if m else None


class CTorchIOError(Error, OSError):
    code = CT_ERR_IO

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        Error.__init__(self, message, code)


class CTorchMemoryError(Error, MemoryError):
    code = CT_ERR_OUT_OF_MEMORY


class NotSupportedError(Error, NotImplementedError):
    code = CT_ERR_NOT_SUPPORTED


class TorchError(Error, RuntimeError):
    code = CT_ERR_TORCH


class ItemError(TorchError, ValueError):
    """Tensor.item() of a tensor that has not exactly one element: a
    RuntimeError (torch 2.x raises one) and a ValueError (torch 1.x)."""


class CallbackError(Error, RuntimeError):
    code = CT_ERR_CALLBACK


class InternalError(Error, RuntimeError):
    code = CT_ERR_INTERNAL


class CTorchTimeoutError(Error, TimeoutError):
    """A wait that ran past its timeout (distributed): also the built-in
    TimeoutError."""
    code = CT_ERR_TIMEOUT

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        Error.__init__(self, message, code)


class LibraryNotFoundError(Error, ImportError):
    """libctorch.so could not be found or loaded, or has the wrong ABI."""


#: status -> the class raised for it
ERRORS = {c.code: c for c in (InvalidArgumentError, CTorchTypeError, CTorchIndexError,
                               NotFoundError, CTorchIOError, CTorchMemoryError,
                               NotSupportedError, TorchError, CallbackError, InternalError,
                               CTorchTimeoutError)}
