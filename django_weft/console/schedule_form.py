"""The schedule form and its inputs: a searchable job and zone, the args as a form of their own.

The job and the zone are text inputs with a ``<datalist>`` (the browser's own search, no
script): the jobs of the registry, the zones of the tz database. The args become one
input per arg of the job, read from its args serializer or, for a job without one, from
its function's keyword parameters; an arg no plain input holds (a list, a nested
object) is a JSON input of its own, and a job this process does not know gets one JSON
input for all its args. What the inputs give is checked by the job itself
(:meth:`django_weft.jobs.registry.Job.validate_args`), as on every other write path.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from zoneinfo import available_timezones

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from rest_framework import serializers

from django_weft.console import formatting
from django_weft.engine.flows.group_steps import GATHER
from django_weft.engine.schedules.saving import validate_job_args
from django_weft.exceptions import UnknownJob
from django_weft.jobs.registry import Job, NoArgs, registry
from django_weft.models import Schedule

if TYPE_CHECKING:
    ScheduleFormBase = forms.ModelForm[Schedule]
else:
    # ModelForm is generic only to the type checker.
    ScheduleFormBase = forms.ModelForm


class DatalistInput(forms.TextInput):
    """A text input that offers ``options`` (value, label) as it is typed."""

    template_name = "admin/django_weft/schedule/datalist_input.html"

    def __init__(
        self, options: Sequence[tuple[str, str]], attrs: dict[str, Any] | None = None
    ) -> None:
        super().__init__({"autocomplete": "off", "spellcheck": "false", **(attrs or {})})
        self.options = options

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        widget = context["widget"]
        widget["list_id"] = f"{widget['attrs'].get('id') or name}_options"
        widget["attrs"]["list"] = widget["list_id"]
        widget["options"] = self.options
        return context


def job_options() -> list[tuple[str, str]]:
    """The registered jobs, each with the first line of its docstring; not ``weft.gather``,
    which only a workflow's group step runs (started on its own it fails, saying so)."""
    return [(job.name, _first_line(job.func.__doc__)) for job in registry if job.name != GATHER]


@functools.cache
def zone_options() -> list[tuple[str, str]]:
    # Scanning the tz database takes a while: once per process.
    return [(zone, "") for zone in sorted(available_timezones())]


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n", 1)[0]


# -- args ---------------------------------------------------------------------------------------

#: What an arg's input is: its HTML input, and how its text becomes a JSON value.
KINDS = ("text", "integer", "number", "boolean", "choice", "json")


@dataclass(frozen=True)
class ArgInput:
    """One arg of a job as the form asks for it."""

    name: str
    kind: str
    required: bool
    help: str = ""
    choices: tuple[tuple[str, str], ...] = ()


def arg_inputs(job_name: str) -> list[ArgInput] | None:
    """The inputs of a job's args, or None when only a JSON object can hold them.

    None for a job this process does not know, and for a function without a serializer
    that takes ``**options`` (any key goes, so there is no list of inputs to make).
    """
    try:
        job = registry.get(job_name)
    except UnknownJob:
        return None
    if job.args is NoArgs:
        return _signature_inputs(job)
    return [
        _serializer_input(name, declared)
        for name, declared in job.args().fields.items()
        if not declared.read_only
    ]


def _serializer_input(name: str, declared: serializers.Field[Any, Any, Any, Any]) -> ArgInput:
    help_text = str(declared.help_text or "")
    required = bool(declared.required)
    if isinstance(declared, serializers.BooleanField):
        return ArgInput(name, "boolean", required, help_text)
    if isinstance(declared, serializers.MultipleChoiceField):
        return ArgInput(name, "json", required, help_text)
    if isinstance(declared, serializers.ChoiceField):
        choices = tuple((str(key), str(label)) for key, label in declared.choices.items())
        return ArgInput(name, "choice", required, help_text, choices)
    if isinstance(declared, serializers.IntegerField):
        return ArgInput(name, "integer", required, help_text)
    if isinstance(declared, serializers.FloatField):
        return ArgInput(name, "number", required, help_text)
    if isinstance(
        declared,
        serializers.CharField
        | serializers.DecimalField
        | serializers.UUIDField
        | serializers.DateTimeField
        | serializers.DateField
        | serializers.TimeField
        | serializers.DurationField,
    ):
        # The serializer reads these from their text, as an API client sends them.
        return ArgInput(name, "text", required, help_text)
    return ArgInput(name, "json", required, help_text or _("A JSON value."))


_BY_TYPE = {bool: "boolean", int: "integer", float: "number", str: "text"}


def _signature_inputs(job: Job) -> list[ArgInput] | None:
    try:
        signature = inspect.signature(job.func, eval_str=True)
    except (NameError, TypeError, SyntaxError):
        signature = inspect.signature(job.func)  # annotations left as written
    parameters = list(signature.parameters.values())[1:]  # the run context comes first
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return None
    inputs = []
    for parameter in parameters:
        if parameter.kind not in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        ):
            continue
        required = parameter.default is inspect.Parameter.empty
        annotated = parameter.annotation
        if annotated is inspect.Parameter.empty and not required:
            annotated = type(parameter.default)
        kind = _BY_TYPE.get(annotated, "json") if isinstance(annotated, type) else "json"
        default = json.dumps(parameter.default, default=str)
        help_text = "" if required else _("Default: %(value)s.") % {"value": default}
        inputs.append(ArgInput(parameter.name, kind, required, help_text))
    return inputs


class RawArgs(dict[str, Any]):
    """The args' inputs as typed (text), before they are read as JSON values."""


#: Posted with the args' inputs: the args came as inputs, not as one JSON text.
FORM_MARKER = "__inputs"


class ArgsWidget(forms.Widget):
    """The args' inputs, or one JSON textarea when ``inputs`` is None."""

    template_name = "admin/django_weft/schedule/args_widget.html"

    def __init__(self, inputs: list[ArgInput] | None = None, job: str = "") -> None:
        super().__init__()
        self.inputs = inputs
        self.job = job

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        widget = context["widget"]
        widget["job"] = self.job
        widget["deployed"] = self.job in registry
        widget["marker"] = f"{name}.{FORM_MARKER}"
        widget["inputs"] = None
        if self.inputs is None:
            widget["json"] = (
                value if isinstance(value, str) else formatting.pretty_json(value or {})
            )
            return context
        given = value if isinstance(value, Mapping) else {}
        raw = isinstance(value, RawArgs)
        widget["inputs"] = [
            {
                "arg": arg,
                "name": f"{name}.{arg.name}",
                "id": f"{widget['attrs'].get('id') or name}_{arg.name}",
                "value": _shown(given.get(arg.name), arg.kind, raw=raw),
            }
            for arg in self.inputs
        ]
        return context

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        if self.inputs is None or f"{name}.{FORM_MARKER}" not in data:
            # One JSON text: this widget's own, or a post made without the inputs.
            return data.get(name)
        typed = RawArgs()
        for arg in self.inputs:
            key = f"{name}.{arg.name}"
            typed[arg.name] = key in data if arg.kind == "boolean" else data.get(key, "")
        return typed

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return name not in data and f"{name}.{FORM_MARKER}" not in data


def _shown(value: Any, kind: str, *, raw: bool) -> Any:
    """An arg's value as its input shows it: as typed, or the stored value as text."""
    if value is None or raw or kind == "boolean":
        return value
    if kind == "json":
        return json.dumps(value, ensure_ascii=False)
    return str(value)


class ArgsField(forms.Field):
    """The args: a JSON object, from the args' inputs or from one JSON text."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", ArgsWidget())
        super().__init__(**kwargs)

    def use_job(self, job_name: str) -> None:
        """Ask for the args of the job named ``job_name``."""
        self.widget = ArgsWidget(arg_inputs(job_name), job_name)

    def to_python(self, value: Any) -> dict[str, Any]:
        if isinstance(value, RawArgs):
            return self._from_inputs(value)
        if isinstance(value, Mapping):
            return dict(value)
        if value in (None, ""):
            return {}
        try:
            loaded = json.loads(value)
        except ValueError as error:
            raise ValidationError(
                _(
                    "Not valid JSON (%(error)s); write the args as a JSON object,"
                    ' e.g. {"text": "hello"}.'
                )
                % {"error": error}
            ) from None
        if not isinstance(loaded, dict):
            raise ValidationError(
                _('Expected a JSON object of named args, e.g. {"text": "hello"}, not %(value)s.')
                % {"value": json.dumps(loaded)}
            )
        return loaded

    def _from_inputs(self, typed: RawArgs) -> dict[str, Any]:
        """The typed inputs as JSON values; an empty one is left out (the job's default)."""
        assert isinstance(self.widget, ArgsWidget)
        assert self.widget.inputs is not None
        args: dict[str, Any] = {}
        errors = []
        for arg in self.widget.inputs:
            text = typed.get(arg.name)
            if arg.kind == "boolean":
                args[arg.name] = bool(text)
                continue
            if not isinstance(text, str):
                continue
            if text == "":
                if arg.required and arg.kind == "text":
                    args[arg.name] = ""  # the job's own check says it may not be blank
                continue
            try:
                args[arg.name] = _read(text, arg.kind)
            except ValueError as error:
                errors.append(f"{arg.name}: {error}")
        if errors:
            raise ValidationError(errors)
        return args

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(data) != (initial or {})
        except ValidationError:
            return True


def _read(text: str, kind: str) -> Any:
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError(_('"%(text)s" is not a whole number.') % {"text": text}) from None
    if kind == "number":
        try:
            return float(text)
        except ValueError:
            raise ValueError(_('"%(text)s" is not a number.') % {"text": text}) from None
    if kind == "json":
        try:
            return json.loads(text)
        except ValueError as error:
            raise ValueError(_("not valid JSON (%(error)s).") % {"error": error}) from None
    return text


# -- the form -----------------------------------------------------------------------------------


class ScheduleForm(ScheduleFormBase):
    """Refuses what the deployed code cannot run: an unknown job, args that fail its
    serializer (the model itself checks the plan). The job and the zone are searched as
    they are typed; the args are a form of the job's own (the inputs above)."""

    args = ArgsField(help_text=gettext_lazy("The job's args."))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "job" in self.fields:
            self.fields["job"].widget = DatalistInput(job_options(), {"class": "vTextField"})
        if "timezone" in self.fields:
            self.fields["timezone"].widget = DatalistInput(zone_options(), {"class": "vTextField"})
        if "at" in self.fields:
            # The admin's split date and time inputs have no label of their own on
            # Django 5.2 (6.0 labels them): name each for assistive technology.
            for part, name in zip(
                getattr(self.fields["at"].widget, "widgets", ()),
                (gettext_lazy("date"), gettext_lazy("time")),
                strict=False,
            ):
                part.attrs["aria-label"] = name
        if "args" in self.fields:
            job = self.data.get(self.add_prefix("job")) if self.is_bound else None
            if job is None:
                job = self.initial.get("job") or self.instance.job
            cast(ArgsField, self.fields["args"]).use_job(str(job or ""))

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        if "job" in cleaned and "args" in cleaned:
            try:
                cleaned["args"] = validate_job_args(cleaned["job"], cleaned["args"])
            except ValidationError as error:
                for field, messages in error.message_dict.items():
                    self.add_error(field if field in self.fields else None, messages)
        return cleaned
