"""A stored module's form, written as code: the source in a monospace editor with line
numbers (``module_editor.js``, plain textarea styling without it), the grants as a
checklist of the host functions this process registers.

The checklist offers what is registered here and keeps what the module already grants
(a name registered only on the workers stays granted, marked as unknown here); the form
accepts any name, because the service layer (``save_module_for``) decides which grants
exist and who may give them, and says so on the form.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_weft.models import Module
from django_weft.sandbox.host import host_functions

if TYPE_CHECKING:
    ModuleFormBase = forms.ModelForm[Module]
else:
    # ModelForm is generic only to the type checker.
    ModuleFormBase = forms.ModelForm


class CodeEditor(forms.Textarea):
    """A textarea for source: monospace, never soft-wrapped (indentation is meaning), no
    spelling checks or capitals; ``module_editor.js`` adds the line numbers."""

    def __init__(self) -> None:
        super().__init__(
            attrs={
                "class": "weft-code",
                "rows": 24,
                "wrap": "off",
                "spellcheck": "false",
                "autocapitalize": "off",
                "autocomplete": "off",
                "data-weft-code": "python",
            }
        )


class GrantsField(forms.MultipleChoiceField):
    """Host function names, each a checkbox; any posted name is passed on for the service
    layer to judge, so an unknown one is refused there, by name."""

    widget = forms.CheckboxSelectMultiple

    def valid_value(self, value: str) -> bool:
        return True


def grant_choices(granted: Iterable[str]) -> list[tuple[str, str]]:
    """Each registered host function with the first line of its docstring, then the
    names granted but not registered in this process."""
    choices = []
    for name in host_functions:
        function = host_functions.get(name)
        summary = ((function.__doc__ if function else None) or "").strip().split("\n")[0]
        choices.append((name, f"{name}: {summary}" if summary else name))
    unknown = sorted(set(granted) - set(host_functions))
    choices += [(name, _("%(name)s (not registered here)") % {"name": name}) for name in unknown]
    return choices


class ModuleForm(ModuleFormBase):
    """The fields an edit writes. The service layer checks the source (naming the line),
    the grants and who may save; its refusal comes back onto this form."""

    grants = GrantsField(
        label=gettext_lazy("Grants"),
        required=False,
        help_text=gettext_lazy("The host functions the module may call with host(name, ...)."),
    )

    class Meta:
        model = Module
        fields = ["name", "source", "grants"]
        widgets = {"source": CodeEditor()}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        granted = [str(name) for name in (self.instance.grants or [])]
        if self.is_bound:
            widget = self.fields["grants"].widget
            granted += widget.value_from_datadict(self.data, self.files, self.add_prefix("grants"))
        choices = grant_choices(granted)
        self.fields["grants"].choices = choices  # type: ignore[attr-defined]
        if not choices:
            self.fields["grants"].help_text = _(
                "This project registers no host function (docs/sandbox.md, host_function), "
                "so there is none to grant."
            )
