"""Frozen dataclasses built from untyped mappings (TOML, notebook globals), with one-line errors.

Every user-facing settings object (config sections, template parameters, the competition spec) goes through
`build`, so an unknown key, a wrong type, an out-of-range or malformed value always reads the same way: where,
which key, what was wrong, what is allowed.
"""
from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from kit.errors import KitError


def setting(default: Any, *, choices: tuple | Callable[[], tuple] | None = None, minimum: float | None = None,
            maximum: float | None = None, normalize: Callable[[Any], Any] | None = None, doc: str = "") -> Any:
    """A dataclass field with an optional set of allowed values or bounds. `normalize` returns the value in its
    one spelling, or raises ValueError saying what is wrong and what to write instead; `doc` says what it means.
    `choices` may be a function giving them, asked at each check (a registry that grows)."""
    if isinstance(default, (list, dict)):
        raise TypeError("use a tuple default")
    return dataclasses.field(default=default, metadata={"choices": choices, "minimum": minimum, "maximum": maximum,
                                                        "normalize": normalize, "doc": doc})


def names(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def defaults(cls) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


def build(cls, values: Mapping[str, Any], where: str):
    """`cls(**values)` after checking names, types, choices and bounds; errors name `where` and the key."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for key in values:
        if key not in known:
            raise KitError(f"{where}: unknown key '{key}' (known: {', '.join(known)})")
    for name, f in known.items():
        if name not in values and f.default is dataclasses.MISSING:
            raise KitError(f"{where}: missing key '{name}' ({describe(hints[name])})")
    out = {}
    for key, value in values.items():
        meta = known[key].metadata
        choices = meta.get("choices")
        choices = choices() if callable(choices) else choices
        # in an `int | str` field, choices name the allowed strings and minimum bounds the numbers
        mixed = _mixed(hints[key], choices) if choices and _is_union(hints[key]) else None
        value = coerce(value, hints[key], f"{where}: {key}", mixed)
        if choices and isinstance(value, type(choices[0])) and value not in choices:
            if mixed:
                raise KitError(f"{where}: {key} = {value!r} must be {mixed}")
            allowed = ", ".join(repr(c) for c in choices)
            raise KitError(f"{where}: {key} = {value!r} is not one of {allowed}")
        if meta.get("minimum") is not None and not isinstance(value, (str, bool)) and value < meta["minimum"]:
            raise KitError(f"{where}: {key} = {value!r} must be at least {meta['minimum']}")
        if meta.get("maximum") is not None and not isinstance(value, (str, bool)) and value > meta["maximum"]:
            raise KitError(f"{where}: {key} = {value!r} must be at most {meta['maximum']}")
        if meta.get("normalize"):
            try:
                value = meta["normalize"](value)
            except ValueError as e:
                raise KitError(f"{where}: {key} = {value!r} {e}") from None
        out[key] = value
    return cls(**out)


def coerce(value: Any, hint: Any, where: str, expected: str | None = None) -> Any:
    """`value` as type `hint` (int for float, list for tuple are accepted), or a KitError saying it must be
    `expected` (default: what `hint` describes)."""
    options = typing.get_args(hint) if _is_union(hint) else (hint,)
    for option in options:
        ok, converted = _try(value, option)
        if ok:
            return converted
    raise KitError(f"{where} must be {expected or describe(hint)}, got {value!r}")


def describe(hint: Any) -> str:
    if _is_union(hint):
        return " or ".join(describe(h) for h in typing.get_args(hint))
    if typing.get_origin(hint) in (tuple, list):
        return f"a list of {describe(typing.get_args(hint)[0])}s"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false", dict: "a table"}.get(
        hint, getattr(hint, "__name__", str(hint))
    )


def _mixed(hint: Any, choices: tuple) -> str:
    """What a union field with choices allows: `an integer or "auto"`, not `an integer or a string`."""
    kinds = [describe(h) for h in typing.get_args(hint) if h is not type(choices[0])]
    allowed = kinds + [json.dumps(c) for c in choices]
    return ", ".join(allowed[:-1]) + " or " + allowed[-1]


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _try(value: Any, hint: Any) -> tuple[bool, Any]:
    if hint is bool:
        return isinstance(value, bool), value
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok, float(value) if ok else value
    if hint is str:
        return isinstance(value, str), value
    if hint is dict:
        return isinstance(value, dict), value
    if typing.get_origin(hint) is tuple:
        item = typing.get_args(hint)[0]
        if not isinstance(value, (list, tuple)):
            return False, value
        converted = []
        for v in value:
            ok, c = _try(v, item)
            if not ok:
                return False, value
            converted.append(c)
        return True, tuple(converted)
    raise TypeError(f"unsupported field type {hint!r}")
