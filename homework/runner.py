"""The student's side of grading: runs a submission's cells in the jail and answers with data.

    python -I runner.py FD   (inside the jail that ``jail.py`` builds; requests on stdin, replies on FD)

It holds no test, no reference value and no grader channel. Its first line, before
any of the submission's code runs, is ``{"ready": true}`` (so the trusted side can
tell a jail that failed to start from a submission). Then it answers requests, one
line each, in the namespace the notebook's cells build:

* ``{"cell": SOURCE, "number": N}`` runs one code cell (an error ends the cell, not
  the run) and answers ``{"cell": N, "raised": "TypeError: ..." or null}``; the
  trusted side sends the cells one at a time, each with a time limit of its own;
* ``{"names": [...]}`` answers with the value of each name the tests need, as data
  (:func:`encode`);
* ``{"call": NAME, "args": [...], "kwargs": {...}}`` calls the student's function
  ``NAME`` on inputs that the trusted checker chose, and answers with the result as
  data.

Whatever the student's code does to this process, it can change only its own answers.

:func:`encode` and :func:`decode` are the one data format of both sides: JSON
with ``None``, booleans, numbers and strings as themselves and tagged objects for
the rest (lists, tuples, dicts, sets, NumPy arrays and scalars, PyTorch tensors,
non-finite floats). :func:`decode` builds plain values only; it never calls
anything a submission defined, so the trusted side may use it on any answer.

On the trusted side a reply is read by :func:`loads` and :func:`decode`, whose work is linear in the
reply's bytes whatever it holds (but for sorting the hashes of a set's items or a dict's keys): ints
within int64 and floats of at most :data:`NUMBER_CHARS` characters (Python's ``int`` of a long digit
string is not linear), at most :data:`MAX_CONTAINERS` lists and objects, :data:`MAX_DEPTH` levels,
arrays of at most :data:`MAX_DIMS` dimensions and :data:`MAX_ITEMS` numbers; and no set, frozenset or
dict in which more than :data:`MAX_SHARED_HASH` items share one hash (an int's hash is the int modulo
``2**61 - 1``: a set of 80,000 multiples of it took quadratic time to build, holding the interpreter
lock all along).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import types

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64")
MAX_ITEMS = 1_000_000  # elements of one array
MAX_DEPTH = 20
MAX_DIMS = 32  # NumPy 1's most
NUMBER_CHARS = 40  # a float64's repr has at most 24; an int64 at most 20
MAX_CONTAINERS = 2**20  # JSON lists and objects in one reply (each costs the reading process about 60 bytes)
MAX_SHARED_HASH = 8  # items of one set or dict with the same hash (distinct ints share one only 2**61 - 1 apart)
INT64 = range(-(2**63), 2**63)


def encode(value: object, depth: int = 0) -> object:
    """``value`` as JSON-ready data; anything else as ``{"unsupported": type name}``."""
    if depth > MAX_DEPTH:
        return {"unsupported": "nesting too deep"}
    kind = type(value)
    if value is None or kind in (bool, str) or (kind is int and abs(value) < 2**63):
        return value
    if kind is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    if kind in (list, tuple, set, frozenset):
        items = sorted(value, key=repr) if kind in (set, frozenset) else value
        return {kind.__name__: [encode(item, depth + 1) for item in items]}
    if kind is dict:
        return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if callable(value):
        return {"function": kind.__name__}
    module = kind.__module__.split(".")[0]
    if module == "torch" and kind.__name__ in ("Tensor", "Parameter"):
        array = value.detach().cpu().numpy()
        return {"tensor": _array(array, depth)["ndarray"]} if str(array.dtype) in DTYPES else {"unsupported": "dtype"}
    if module == "numpy" and hasattr(value, "dtype") and str(value.dtype) in DTYPES:
        if kind.__name__ == "ndarray":
            return _array(value, depth)
        if hasattr(value, "item") and getattr(value, "shape", None) == ():
            return {"scalar": [str(value.dtype), encode(value.item(), depth + 1)]}
    return {"unsupported": kind.__name__}


def _array(array, depth: int) -> dict:
    """An array of :data:`DTYPES` as its numbers (``tolist``: bools, ints, floats), each encoded as :func:`encode`
    encodes it. Most numbers are themselves: only an array holding one that is not (a non-finite float, int64's
    minimum) is encoded number by number (a million numbers: 0.06 s, not 1 s)."""
    if array.size > MAX_ITEMS:
        return {"unsupported": "array too large"}
    items = array.ravel().tolist()
    themselves = all(map(math.isfinite, items)) and min(items, default=0) > -(2**63)
    data = items if themselves else [encode(item, depth + 1) for item in items]
    return {"ndarray": {"dtype": str(array.dtype), "shape": list(array.shape), "data": data}}


def loads(line: bytes) -> object:
    """One JSON reply as plain data, in time and memory linear in its bytes (see the module docstring); ValueError
    for anything :func:`encode` and ``json.dumps`` do not write. Its lists and objects are counted before it is
    parsed (a ``[`` or ``{`` in a string counts too): each costs the parsing process 56 bytes or more."""
    if line.count(b"[") + line.count(b"{") > MAX_CONTAINERS:
        raise ValueError(f"more than {MAX_CONTAINERS} lists and objects")
    return json.loads(line, parse_int=_int64, parse_float=_float64, parse_constant=_refused)


def _int64(text: str) -> int:
    if len(text) > NUMBER_CHARS or int(text) not in INT64:
        raise ValueError("a number out of its dtype's range (an int is an int64)")
    return int(text)


def _float64(text: str) -> float:
    if len(text) > NUMBER_CHARS:
        raise ValueError("a float of too many digits")
    return float(text)


def _refused(text: str) -> None:
    raise ValueError(f"{text} is sent as {{'float': ...}}")


def decode(data: object, depth: int = 0) -> object:
    """The value :func:`encode` described, rebuilt from plain data; ValueError for anything else."""
    try:
        return _decoded(data, depth)
    except OverflowError:  # NumPy's, for a number out of its dtype's range (int64 holds no 2**63)
        raise ValueError("a number out of its dtype's range") from None


def _decoded(data: object, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise ValueError("nesting too deep")
    if type(data) is int and data not in INT64:
        raise ValueError("a number out of its dtype's range (an int is an int64)")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is not dict or len(data) != 1:
        raise ValueError(f"not an encoded value: {type(data).__name__}")
    ((tag, body),) = data.items()
    if tag == "float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag in ("list", "tuple", "set", "frozenset") and type(body) is list:
        items = [_decoded(item, depth + 1) for item in body]
        if tag in ("set", "frozenset"):
            _few_share_a_hash(items)
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "dict" and type(body) is list:
        pairs = [(_decoded(k, depth + 1), _decoded(v, depth + 1)) for k, v in _pairs(body)]
        _few_share_a_hash([key for key, _ in pairs])
        return dict(pairs)
    if tag in ("ndarray", "tensor") and type(body) is dict:
        return _rebuild(body, tensor=tag == "tensor")
    if tag == "scalar" and type(body) is list and len(body) == 2 and body[0] in DTYPES:
        import numpy

        return numpy.dtype(body[0]).type(_decoded(body[1], depth + 1))
    raise ValueError(f"not an encoded value: tag {tag!r}")


def _few_share_a_hash(keys: list) -> None:
    """ValueError unless the ``keys`` of a set or dict to be built are hashable and at most :data:`MAX_SHARED_HASH`
    share one hash: building it then compares each key with at most that many others. The runner encodes a set or
    dict, whose keys are distinct, so two of them share a hash only by chance (-1 and -2 do)."""
    try:
        hashes = sorted(map(hash, keys))
    except TypeError:
        raise ValueError("a set's items and a dict's keys must be hashable") from None
    if any(hashes[i] == hashes[i + MAX_SHARED_HASH] for i in range(len(hashes) - MAX_SHARED_HASH)):
        raise ValueError(f"more than {MAX_SHARED_HASH} keys of a set or dict share one hash")


def _pairs(body: list) -> list:
    if not all(type(pair) is list and len(pair) == 2 for pair in body):
        raise ValueError("a dict is a list of [key, value] pairs")
    return body


def _rebuild(body: dict, *, tensor: bool):
    import numpy

    dtype, shape, data = body.get("dtype"), body.get("shape"), body.get("data")
    if dtype not in DTYPES or type(shape) is not list or len(shape) > MAX_DIMS:
        raise ValueError(f"an array needs a known dtype and a shape of at most {MAX_DIMS} dimensions")
    if not all(type(n) is int and 0 <= n <= MAX_ITEMS for n in shape):
        raise ValueError(f"an array's shape holds ints from 0 to {MAX_ITEMS}")
    if type(data) is not list or len(data) != math.prod(shape) or len(data) > MAX_ITEMS:
        raise ValueError("an array's data must have as many numbers as its shape says")
    numbers = {bool, int, float}
    if not set(map(type, data)) <= numbers:  # numbers decode to themselves: only an array with others is decoded
        data = [decode(item, MAX_DEPTH) for item in data]
        if not set(map(type, data)) <= numbers:
            raise ValueError("an array holds numbers only")
    array = numpy.array(data, dtype=dtype).reshape(shape)
    if not tensor:
        return array
    import torch

    return torch.from_numpy(array)


def _without_magics(source: str) -> str:
    """A cell as Python: a ``%%`` cell magic line is dropped, each ``%`` or ``!`` line becomes ``pass``."""
    lines = source.splitlines()
    if lines and lines[0].startswith("%%"):
        lines = lines[1:]
    return "\n".join(re.sub(r"^(\s*)[%!].*$", r"\1pass", line) for line in lines)


class _Quiet:
    """What otter's notebook API becomes while grading: every call does nothing (the checker grades)."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return _Quiet


def described(error: BaseException) -> str:
    """``"TypeError: its message"`` (500 characters at most), or the type's name alone if the message cannot be
    had (a student's exception may raise in ``__str__``)."""
    try:
        return f"{type(error).__name__}: {error}"[:500]
    except BaseException:
        return type(error).__name__


def fresh_namespace() -> dict:
    """The namespace a notebook's cells run in, with otter's notebook API made quiet (:class:`_Quiet`)."""
    otter = types.ModuleType("otter")
    otter.Notebook = _Quiet
    sys.modules["otter"] = otter
    return {"__name__": "__main__", "__builtins__": __builtins__}


def answer(request: dict, namespace: dict) -> dict:
    """The reply to one request (see the module docstring)."""
    if "cell" in request:
        try:
            exec(compile(_without_magics(request["cell"]), f"<cell {request['number']}>", "exec"), namespace)
            return {"cell": request["number"], "raised": None}
        except BaseException as error:  # the student's error, reported as data
            return {"cell": request["number"], "raised": described(error)}
    if "names" in request:
        return {"values": {name: encode(namespace[name]) for name in request["names"] if name in namespace}}
    function = namespace.get(request["call"])
    try:
        args = [decode(item) for item in request["args"]]
        kwargs = {key: decode(item) for key, item in request["kwargs"].items()}
        return {"value": encode(function(*args, **kwargs))}
    except BaseException as error:
        return {"raised": described(error)}


def main() -> int:
    replies = os.fdopen(int(sys.argv[1]), "w")
    replies.write(json.dumps({"ready": True}) + "\n")  # before any of the submission's code: the jail started
    replies.flush()
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)  # the grader stops reading stderr: what the notebook writes goes nowhere
    sys.stdout = sys.stderr = open(quiet, "w")  # noqa: SIM115
    namespace = fresh_namespace()
    for line in sys.stdin:
        replies.write(json.dumps(answer(json.loads(line), namespace)) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
