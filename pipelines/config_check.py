"""Strict reading of the user's config file: every problem is one line naming the file, line, column and key.

Why: Dagster's ``Config`` and ``ConfigurableResource`` classes accept and ignore keys they do not
declare, so a misspelt setting (``timeot_s``) would quietly not apply. Instead of a hand-written list
of keys per section, the raw YAML is walked against the pydantic classes themselves (their
``model_fields``, nested models, ``list[Model]``, ``dict[str, Model]``, ``Optional[...]``), so a new
field is known here the moment it is declared. pydantic's type errors and PyYAML's syntax errors are
reduced to one line each, so a user sees what to fix rather than a traceback. The same walk finds the
fields marked as paths (``resources.config_paths``), so paths are resolved without a list of path keys either.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import difflib
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from resources.config_paths import PathField

KeyPath = tuple[typing.Union[str, int], ...]
"""Where a value sits in the file: section, keys and list indices, e.g. ``("pool", "folders", 0, "path")``."""

SchemaOverrides = Mapping[tuple[type, str], type]
"""Free-form ``dict`` fields whose keys are in fact the fields of another class, by (model class, field name)."""

_SECRET_NAME = re.compile(r"secret|password|token|key", re.IGNORECASE)


class ConfigError(ValueError):
    """A user error in the config file; its message is one line per problem, ready to print."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong in the file: where (``path``), what (``message``); ``at_key`` points at the key, not its value."""

    path: KeyPath
    message: str
    at_key: bool = False


def dotted(path: KeyPath) -> str:
    """``("pool", "folders", 0, "path")`` as ``pool.folders[0].path``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def unknown_key(path: KeyPath, key: object, valid: typing.Iterable[str], noun: str = "key") -> Problem:
    """The problem for a key that is not one of ``valid``, with the closest valid key (or the whole list) as a hint."""
    valid = sorted(valid)
    close = difflib.get_close_matches(str(key), valid, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(valid)}"
    where = f"{dotted(path)}: " if path else ""
    return Problem(path + (key,), f"{where}unknown {noun} {key!r}; {hint}", at_key=True)


def read_yaml(path: Path) -> tuple[Any, Optional[yaml.Node]]:
    """The file's data and its node tree (for line numbers); ``ConfigError`` with ``file:line:column`` otherwise."""
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path}:{line}:{exc.start - line_start + 1}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        ) from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(_yaml_error_line(path, exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: {' '.join(str(exc).split())}") from None
    finally:
        loader.dispose()


def _yaml_error_line(path: Path, exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    what = exc.problem or exc.context or "invalid YAML"
    if exc.context and exc.problem:
        context = exc.context
        if exc.context_mark is not None and exc.context_mark is not mark:
            context += f" that starts at line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1}"
        # the parser's context says what it was doing ("while parsing ..."), the composer's what it expected
        what = f"{what} ({context})" if context.startswith("while") else f"{context}, {what}"
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    return f"{where}: {' '.join(what.split())}"


def format_problems(path: Path, node: Optional[yaml.Node], problems: typing.Iterable[Problem]) -> str:
    """One line per problem in file order, each starting ``file:line:column:`` where the node tree locates it."""
    located = []
    for problem in problems:
        mark = _locate(node, problem.path, problem.at_key)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        located.append(((mark.line, mark.column) if mark is not None else (-1, -1), f"{where}: {problem.message}"))
    return "\n".join(line for _, line in sorted(located, key=lambda pair: pair[0]))


def _locate(node: Optional[yaml.Node], path: KeyPath, at_key: bool) -> Optional[yaml.Mark]:
    """The mark of ``path`` in the node tree, or of its deepest existing parent (a missing key's mapping)."""
    mark = node.start_mark if node is not None else None
    for depth, part in enumerate(path):
        child = None
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:  # the last duplicate wins, as when the document is constructed
                if isinstance(key_node, yaml.ScalarNode) and key_node.value == str(part):
                    child = (key_node, value_node)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = (node.value[part], node.value[part])
        if child is None:
            return mark
        node = child[1]
        mark = (child[0] if at_key and depth == len(path) - 1 else child[1]).start_mark
    return mark


def duplicate_keys(node: Optional[yaml.Node], path: KeyPath = ()) -> Iterator[Problem]:
    """Keys given twice in one mapping: YAML keeps the last silently, so the first setting would not apply."""
    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if key_node.value in first:
                    where = f"{dotted(path)}: " if path else ""
                    yield Problem(path + (key_node.value,), f"{where}duplicate key {key_node.value!r}"
                                  f" (first at line {first[key_node.value]}); remove one", at_key=True)
                first.setdefault(key_node.value, key_node.start_mark.line + 1)
                yield from duplicate_keys(value_node, path + (key_node.value,))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from duplicate_keys(item, path + (index,))


def _unwrap(annotation: Any) -> Any:
    """``Optional[X]`` and ``Annotated[X, ...]`` as ``X``; any other union as it is (its keys are not walked)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(members[0]) if len(members) == 1 else annotation
    return annotation


def _fields(annotation: Any) -> Optional[dict[str, Any]]:
    """Key -> annotation of a pydantic model or a dataclass; None for anything else."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {field.alias or name: field.annotation for name, field in annotation.model_fields.items()}
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        hints = typing.get_type_hints(annotation)
        return {f.name: hints[f.name] for f in dataclasses.fields(annotation)}
    return None


def known_keys_only(value: Any, annotation: Any, path: KeyPath, overrides: SchemaOverrides) -> tuple[Any, list[Problem]]:
    """``value`` without its unknown keys, and one problem per unknown key (or per bad override value).

    A value of the wrong shape (a list where a mapping is declared) is returned as it is: the class's
    own validation reports it. A field listed in ``overrides`` is walked as that class, and as pydantic
    does not validate the values of a free ``dict`` field, its values are validated here against it.
    """
    annotation = _unwrap(annotation)
    fields = _fields(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    problems: list[Problem] = []
    if fields is not None and isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            if key not in fields:
                problems.append(unknown_key(path, key, fields))
                continue
            override = overrides.get((annotation, key))
            if item is None and _fields(fields[key]) is not None:
                item = {}  # a block whose keys are all commented out: its defaults, as for a section
            kept[key], inner = known_keys_only(item, override or fields[key], path + (key,), overrides)
            if override is not None:
                inner += validate(TypeAdapter(override).validate_python, kept[key], path + (key,))[1]
            problems += inner
        return kept, problems
    if origin in (list, tuple, set, frozenset, collections.abc.Sequence) and isinstance(value, list) and args:
        items = []
        for index, item in enumerate(value):
            item_type = args[0] if origin is not tuple or args[-1] is Ellipsis or index >= len(args) else args[index]
            kept_item, inner = known_keys_only(item, item_type, path + (index,), overrides)
            items.append(kept_item)
            problems += inner
        return items, problems
    if origin in (dict, collections.abc.Mapping) and isinstance(value, dict) and len(args) == 2:
        kept = {}
        for key, item in value.items():
            kept[key], inner = known_keys_only(item, args[1], path + (key,), overrides)
            problems += inner
        return kept, problems
    return value, problems


def construct(cls: type, values: Any, path: KeyPath, **extra: Any) -> tuple[Any, list[Problem]]:
    """``cls(**values, **extra)``, or None and one problem per refused key (a non-mapping is one problem)."""
    if not isinstance(values, dict):
        return None, [Problem(path, f"{dotted(path)}: expected a mapping of keys, got {type(values).__name__}")]
    return validate(lambda kwargs: cls(**kwargs, **extra), values, path)


def validate(build: Callable[[Any], Any], values: Any, path: KeyPath) -> tuple[Any, list[Problem]]:
    """``build(values)``, or None and one problem per key pydantic (or Dagster) refused."""
    from dagster import DagsterError  # here, not at the top: reading the warehouse section needs no Dagster
    from dagster._core.errors import DagsterInvalidConfigError

    try:
        return build(values), []
    except ValidationError as exc:
        return None, [_validation_problem(error, values, path) for error in exc.errors(include_url=False)]
    except DagsterInvalidConfigError as exc:
        return None, [Problem(path, f"{dotted(path)}: {' '.join(error.message.split())}") for error in exc.errors]
    except (DagsterError, TypeError, ValueError) as exc:
        return None, [Problem(path, f"{dotted(path)}: {' '.join(str(exc).split())}")]


def _validation_problem(error: Mapping[str, Any], values: Any, path: KeyPath) -> Problem:
    loc = tuple(error["loc"])
    where = dotted(path + loc)
    if error["type"] == "missing" or (error.get("input") is None and not _present(values, loc)):
        return Problem(path + loc, f"{where}: required key missing")
    message = error["msg"].removeprefix("Value error, ")
    last_name = next((part for part in reversed(loc) if isinstance(part, str)), "")
    if isinstance(error.get("input"), (str, int, float, type(None))) and not _SECRET_NAME.search(last_name):  # not a whole block
        shown = repr(error.get("input"))
        message += f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
    return Problem(path + loc, f"{where}: {message}")


def _present(values: Any, loc: KeyPath) -> bool:
    for part in loc:
        if isinstance(values, dict) and part in values:
            values = values[part]
        elif isinstance(values, list) and isinstance(part, int) and part < len(values):
            values = values[part]
        else:
            return False
    return True



def resolve_paths(values: dict[str, Any], model: type[BaseModel], resolve: Callable[[str], str]) -> dict[str, Any]:
    """``values`` (a block of the file whose keys ``model`` knows) with every value its fields mark with
    ``PathField`` resolved, in nested models, lists and dict values; a marked field left empty takes its default."""
    resolved = dict(values)
    for name, field in model.model_fields.items():
        key = field.alias or name
        marker = _path_marker(field.metadata)
        value = resolved.get(key)
        if not value and not (field.is_required() and key in resolved):  # a required value is resolved as given
            default = None if field.is_required() else field.get_default(call_default_factory=True)
            if marker is not None and marker.under is not None:
                value = str(Path(resolved[marker.under]) / marker.name)
            elif default is None or not _has_paths(field.annotation, field.metadata):
                continue
            else:  # a nested block is filled in from its own fields' defaults
                value = {} if isinstance(default, BaseModel) else default
        resolved[key] = _resolved(value, field.annotation, marker, resolve)
    return resolved


def _path_marker(metadata: typing.Iterable[Any]) -> Optional[PathField]:
    return next((item for item in metadata if isinstance(item, PathField)), None)


def _has_paths(annotation: Any, metadata: typing.Iterable[Any] = ()) -> bool:
    """Whether a value of this type holds a marked path anywhere (a model's field, a list item, a dict value)."""
    if _path_marker(metadata) is not None:
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *extra = typing.get_args(annotation)
        return _has_paths(inner, extra)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return any(_has_paths(field.annotation, field.metadata) for field in annotation.model_fields.values())
    return any(_has_paths(arg) for arg in typing.get_args(annotation))


def _resolved(value: Any, annotation: Any, marker: Optional[PathField], resolve: Callable[[str], str]) -> Any:
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *extra = typing.get_args(annotation)
        return _resolved(value, inner, _path_marker(extra) or marker, resolve)
    if marker is not None and isinstance(value, str):
        return resolve(value) if marker.when is None or marker.when(value) else value
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        return _resolved(value, members[0], marker, resolve) if len(members) == 1 else value
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(value, dict):
        return resolve_paths(value, annotation, resolve)
    if origin is list and isinstance(value, list) and args:
        return [_resolved(item, args[0], None, resolve) for item in value]
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return {key: _resolved(item, args[1], None, resolve) for key, item in value.items()}
    return value
