"""Total readers for untrusted JSON: each returns the typed value or raises PeerProtocolError."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from ..errors import INVALID_PARAMS, PeerProtocolError
from ._model import JsonRpcError, TaskStatus, parse_timestamp

_MISSING: Any = object()


def _fail(what: str, where: str, code: int) -> PeerProtocolError:
    return PeerProtocolError(f"{where}: {what}", jsonrpc_code=code)


def obj(value: object, where: str, code: int = INVALID_PARAMS) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(f"expected a JSON object, got {type(value).__name__}", where, code)
    mapping = cast("Mapping[object, Any]", value)
    if not all(isinstance(key, str) for key in mapping):
        raise _fail("object keys must be strings", where, code)
    return cast("Mapping[str, Any]", mapping)


def string(data: Mapping[str, Any], key: str, where: str, code: int = INVALID_PARAMS) -> str:
    value = data.get(key, _MISSING)
    if value is _MISSING:
        raise _fail(f"'{key}' is required", where, code)
    if not isinstance(value, str):
        raise _fail(f"'{key}' must be a string", where, code)
    return value


def opt_string(data: Mapping[str, Any], key: str, where: str, code: int = INVALID_PARAMS) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail(f"'{key}' must be a string", where, code)
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def opt_millis(data: Mapping[str, Any], key: str, where: str, code: int = INVALID_PARAMS) -> int | None:
    """A non-negative duration in ms; floats with an integral value are accepted (JS peers)."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not _is_int(value) or cast(int, value) < 0:
        raise _fail(f"'{key}' must be a non-negative integer (ms)", where, code)
    return cast(int, value)


def required_nullable_millis(
    data: Mapping[str, Any], key: str, where: str, code: int = INVALID_PARAMS
) -> int | None:
    if key not in data:
        raise _fail(f"'{key}' is required (null means unlimited)", where, code)
    return opt_millis(data, key, where, code)


def status(data: Mapping[str, Any], where: str, code: int = INVALID_PARAMS) -> TaskStatus:
    raw = string(data, "status", where, code)
    try:
        return TaskStatus(raw)
    except ValueError:
        raise _fail(f"unknown task status {raw!r}", where, code) from None


def timestamp(data: Mapping[str, Any], key: str, where: str, code: int = INVALID_PARAMS) -> datetime:
    raw = string(data, key, where, code)
    try:
        return parse_timestamp(raw)
    except (ValueError, OverflowError):
        raise _fail(f"'{key}' is not an ISO 8601 timestamp: {raw!r}", where, code) from None


def opt_object(
    data: Mapping[str, Any], key: str, where: str, code: int = INVALID_PARAMS
) -> Mapping[str, Any] | None:
    value = data.get(key)
    if value is None:
        return None
    return obj(value, f"{where}.{key}", code)


def jsonrpc_error(value: object, where: str, code: int = INVALID_PARAMS) -> JsonRpcError:
    data = obj(value, where, code)
    err_code = data.get("code")
    if not _is_int(err_code):
        raise _fail("'code' must be an integer", where, code)
    message = string(data, "message", where, code)
    return JsonRpcError(code=cast(int, err_code), message=message, data=data.get("data"))


def input_requests(value: object, where: str, code: int = INVALID_PARAMS) -> dict[str, Mapping[str, Any]]:
    data = obj(value, where, code)
    requests: dict[str, Mapping[str, Any]] = {}
    for key, request in data.items():
        entry = obj(request, f"{where}[{key!r}]", code)
        string(entry, "method", f"{where}[{key!r}]", code)
        requests[key] = dict(entry)
    return requests
