"""What a stored Monte-Carlo record must look like, and its checksum (issue 14 item 3).

A record is trusted only when it passes :func:`check_record`:

* its ``checksum`` is the sha256 of the canonical JSON of the record without the
  ``checksum`` key (:func:`record_checksum`), so any edit of any field (a value scaled
  by 3, a flipped status) is detected.  The checksum guards against damage and careless
  edits, not against an adversary who recomputes it: a run directory is as trusted as
  the file system it lives on;
* the envelope has the types of :data:`ENVELOPE` (``task_id`` non-empty str, ``fn``
  ``"module:function"``, ``status`` one of ``ok | diverged | error``, ``reason`` str or
  None, ``payload_hash`` 64 hex digits, ``payload`` dict, ``value`` a dict for ``ok`` and
  ``diverged`` and None for ``error``);
* the value matches the schema registered for its task function, if any
  (:data:`VALUE_SCHEMAS`; the replicate of :mod:`fedsim.validation.worker` is registered here:
  ``values`` one number per payload horizon, the run diagnostics, the optional
  representative-run series).  Unknown keys are refused: a value the reader does not
  know is not a value it can trust.

Records written before checksums existed (no ``checksum`` or no ``fn`` key) fail the
check with the reason ``"no checksum (written by an older fedsim)"``: they are recomputed
once, not trusted; the task functions are deterministic, so the verdicts do not change.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["STATUSES", "canonical_json", "record_checksum", "check_record",
           "VALUE_SCHEMAS",
           "register_value_schema", "is_number", "LEGACY_REASON", "jsonable"]

#: the three outcomes a record can hold
STATUSES = ("ok", "diverged", "error")

LEGACY_REASON = "no checksum (written by an older fedsim)"

_HEX64 = re.compile(r"[0-9a-f]{64}")


def jsonable(obj: Any) -> Any:
    """``json.dumps`` default hook: numpy scalars/arrays -> Python numbers/lists."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def canonical_json(obj: Any) -> str:
    """Sorted-key, compact JSON (numpy values converted): the form every hash is taken of."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=jsonable)


def record_checksum(rec: dict) -> str:
    """sha256 of the canonical JSON of ``rec`` without its ``checksum`` key.

    The record is first round-tripped through JSON, so the checksum of a record in
    memory equals the checksum of the same record read back from disk.
    """
    body = json.loads(canonical_json({k: v for k, v in rec.items() if k != "checksum"}))
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def is_number(x: Any) -> bool:
    """A JSON number (int or float, NaN/inf allowed), not a bool."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _numbers(x: Any) -> bool:
    return isinstance(x, list) and all(is_number(v) for v in x)


def _nonneg_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


#: type checks of the envelope fields
ENVELOPE: dict[str, tuple[Callable[[Any], bool], str]] = {
    "task_id": (lambda x: isinstance(x, str) and x != "", "a non-empty string"),
    "fn": (lambda x: isinstance(x, str) and x.count(":") == 1 and all(x.split(":")),
           "'module:function'"),
    "status": (lambda x: x in STATUSES, f"one of {list(STATUSES)}"),
    "reason": (lambda x: x is None or isinstance(x, str), "a string or null"),
    "payload_hash": (lambda x: isinstance(x, str) and _HEX64.fullmatch(x) is not None,
                     "64 hex digits"),
    "payload": (lambda x: isinstance(x, dict), "an object"),
    "value": (lambda x: x is None or isinstance(x, dict), "an object or null"),
    "checksum": (lambda x: isinstance(x, str) and _HEX64.fullmatch(x) is not None,
                 "64 hex digits"),
}

#: value schema of a task function: ``{field: (required, check, what)}`` plus an optional
#: cross-field check ``(value, payload) -> problem or None``
ValueSchema = tuple[dict[str, tuple[bool, Callable[[Any], bool], str]],
                    Callable[[dict, dict], str | None] | None]
VALUE_SCHEMAS: dict[str, ValueSchema] = {}


def register_value_schema(fn: str, fields: dict[str, tuple[bool, Callable[[Any], bool], str]],
                          cross: Callable[[dict, dict], str | None] | None = None) -> None:
    """Declare the value schema of task function ``fn`` (``"module:function"``)."""
    VALUE_SCHEMAS[fn] = (dict(fields), cross)


def _replicate_cross(value: dict, payload: dict) -> str | None:
    hz = payload.get("horizons")
    if not isinstance(hz, list):
        return "payload.horizons is not a list"
    if len(value["values"]) != len(hz):
        return f"value.values has {len(value['values'])} entries for {len(hz)} horizons"
    if value.get("diverged") is not True and "reason" in value:
        return "value.reason without value.diverged"
    if value.get("diverged") is True and not all(v == math.inf for v in value["values"]):
        return "a diverged replicate must have every value +inf"
    return None


# validation.worker:run_replicate (see its docstring for the meaning of each field)
register_value_schema("fedsim.validation.worker:run_replicate", {
    "values": (True, _numbers, "a list of numbers"),
    "max_staleness": (True, is_number, "a number"),
    "staleness_bound": (True, is_number, "a number"),
    "steps_done": (True, _nonneg_int, "an integer >= 0"),
    "sim_time": (True, is_number, "a number"),
    "inner_failures": (True, _nonneg_int, "an integer >= 0"),
    "staleness_steps": (False, _numbers, "a list of numbers"),
    "concurrency_time": (False, _numbers, "a list of numbers"),
    "concurrency_busy": (False, _numbers, "a list of numbers"),
    "concurrency_mean": (False, is_number, "a number"),
    "diverged": (False, lambda x: x is True, "true"),
    "reason": (False, lambda x: isinstance(x, str), "a string"),
}, _replicate_cross)
# the batched worker returns the very same fields (validation.worker.run_replicate_batched)
register_value_schema("fedsim.validation.worker:run_replicate_batched",
                      *VALUE_SCHEMAS["fedsim.validation.worker:run_replicate"])


def _check_value(rec: dict) -> str | None:
    status, value = rec["status"], rec["value"]
    if status == "error":
        if value is not None:
            return "an error record must have value null"
        if not rec["reason"]:
            return "an error record must have a reason"
        return None
    if not isinstance(value, dict):
        return f"a {status} record must have an object value"
    if status == "diverged" and value.get("diverged") is not True:
        return "a diverged record must have value.diverged = true"
    if status == "ok" and value.get("diverged") is True:
        return "an ok record must not have value.diverged = true"
    schema = VALUE_SCHEMAS.get(rec["fn"])
    if schema is None:
        return None
    fields, cross = schema
    for k in value:
        if k not in fields:
            return f"value.{k} is not a field of {rec['fn']}"
    for k, (required, check, what) in fields.items():
        if k not in value:
            if required:
                return f"value.{k} is missing"
        elif not check(value[k]):
            return f"value.{k} must be {what}, got {type(value[k]).__name__}"
    return cross(value, rec["payload"]) if cross is not None else None


def check_record(rec: Any) -> str | None:
    """None if ``rec`` is a trustworthy record, else a short reason why not."""
    if not isinstance(rec, dict):
        return f"not a JSON object ({type(rec).__name__})"
    if "checksum" not in rec or "fn" not in rec:
        return LEGACY_REASON
    for k, (check, what) in ENVELOPE.items():
        if k not in rec:
            return f"{k} is missing"
        if not check(rec[k]):
            return f"{k} must be {what}"
    extra = sorted(set(rec) - set(ENVELOPE))
    if extra:
        return f"unknown field {extra[0]}"
    if rec["checksum"] != record_checksum(rec):
        return "checksum mismatch (the record was edited or damaged)"
    return _check_value(rec)
