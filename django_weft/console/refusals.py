"""How the console shows a refusal of the service layer: as a message, or on its form.

Every write goes through :mod:`django_weft.operations`, which refuses by raising (one of
``operations.REFUSALS``) before it writes anything. A button or an action shows the
refusal as an error message (:func:`act`). A save or a delete must not go on as if it
had been done: once ``save_model`` or ``delete_model`` returns, Django logs the change
and says it was done "successfully". So those raise :class:`Refused` instead
(:func:`refused`), which rolls back the view's transaction (a delete's log entry, written
before ``delete_model`` is called, with it) and is caught by the view: a refused delete
becomes a message, a refused save its form again, with the refusal on it
(:func:`show_refusals`).

The service layer judges by doing, so the form is not asked first: asking first would
copy its rules or ask it twice. Both helpers tell it that what it does comes through the
admin (:func:`~django_weft.operations.entry_point`), for the record of each action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _

from django_weft import operations
from django_weft.exceptions import WeftError

T = TypeVar("T")
FormT = TypeVar("FormT", bound=forms.BaseForm)

#: What the service layer refuses with (``operations.REFUSALS``).
Refusal = WeftError | ValidationError
#: Where a refused save leaves its refusal for the form shown again.
_REFUSAL = "_weft_refusal"


class Refused(Exception):
    """The service layer refused a save or a delete: nothing was written."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


def act(
    page: admin.ModelAdmin[Any], request: HttpRequest, what: str, work: Callable[[], T]
) -> T | None:
    """``work()`` (an operation); a refusal becomes an error message, not a 500."""
    try:
        with operations.entry_point("admin"):
            return work()
    except operations.REFUSALS as refusal:
        tell(page, request, what, refusal)
        return None


def tell(page: admin.ModelAdmin[Any], request: HttpRequest, what: str, refusal: Refusal) -> None:
    """Show ``refusal`` as an error message about ``what``."""
    _, message, _ = operations.describe_refusal(refusal)
    page.message_user(request, f"{what}: {message}", messages.ERROR)


def refused(work: Callable[[], T]) -> T:
    """``work()`` (an operation), its refusal raised as :class:`Refused`."""
    try:
        with operations.entry_point("admin"):
            return work()
    except operations.REFUSALS as refusal:
        raise Refused(refusal) from refusal


def show_refusals(request: HttpRequest, view: Callable[[], HttpResponse]) -> HttpResponse:
    """``view()`` (a change form view); when its save is refused, ``view()`` again, whose
    form then shows the refusal (see :func:`refusing_form`).

    The refused pass wrote nothing and logged nothing; the second one reads what the
    user typed from the same POST, so the form keeps it.
    """
    try:
        return view()
    except Refused as error:
        setattr(request, _REFUSAL, error.refusal)
        return view()


def refusing_form(request: HttpRequest, form_class: type[FormT]) -> type[FormT]:
    """``form_class``, or when a save of this request was refused, a subclass whose
    validation ends with that refusal (on the fields it names, the rest above the form)."""
    refusal: Refusal | None = getattr(request, _REFUSAL, None)
    if refusal is None:
        return form_class

    def clean(form: FormT) -> Any:
        cleaned = form_class.clean(form)
        add_refusal(form, refusal)
        return cleaned

    return cast(type[FormT], type(form_class.__name__, (form_class,), {"clean": clean}))


class RefusalsOnTheForm:
    """A ``ModelAdmin``'s add and change pages, when the service layer refuses a save:
    the form again, as typed, with the refusal on it (list it before ``ModelAdmin``)."""

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        parent: Any = super()
        return show_refusals(
            request, lambda: parent.changeform_view(request, object_id, form_url, extra_context)
        )

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        parent: Any = super()
        return refusing_form(request, parent.get_form(request, obj, change, **kwargs))


class RefusedDeletesOnThePage:
    """A ``ModelAdmin``'s delete page, when the service layer refuses the delete (its
    ``delete_model`` raising :class:`Refused`): the delete undone, its log entry with it,
    and the object's page again saying why (list it before ``ModelAdmin``)."""

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        page = cast("admin.ModelAdmin[Any]", self)
        parent: Any = super()
        try:
            return cast(HttpResponse, parent.delete_view(request, object_id, extra_context))
        except Refused as refused:
            tell(page, request, _("Not deleted"), refused.refusal)
            return HttpResponseRedirect(change_url(page, unquote(object_id)))


def change_url(page: admin.ModelAdmin[Any], pk: int | str) -> str:
    """The change page of ``page``'s object ``pk``, where a button or a refused delete
    sends the user back to."""
    options = page.model._meta
    name = f"{page.admin_site.name}:{options.app_label}_{options.model_name}_change"
    return reverse(name, args=[quote(pk)])


def add_refusal(form: forms.BaseForm, refusal: Refusal) -> None:
    """Put ``refusal`` on ``form``: each field it names on that field ("args.text" on
    args, naming text), the others and the refusal without fields above the form."""
    if isinstance(refusal, ValidationError) and not hasattr(refusal, "error_dict"):
        # A list of messages names no field (describe_refusal reads only a dict of them).
        form.add_error(None, [_sentence(text) for text in refusal.messages])
        return
    _, message, fields = operations.describe_refusal(refusal)
    if not fields:
        form.add_error(None, _sentence(message))
    for name, texts in fields.items():
        field, _, part = name.partition(".")
        for text in texts:
            if field in form.fields:
                # As the form words its own args errors: "text: This field may not be blank."
                form.add_error(field, f"{part}: {text}" if part else _sentence(text))
            elif name == NON_FIELD_ERRORS:
                form.add_error(None, _sentence(text))
            else:
                form.add_error(None, f"{name}: {text}")


def _sentence(text: str) -> str:
    """``text`` as a sentence: a capital first, a full stop last."""
    text = f"{text[:1].upper()}{text[1:]}"
    return text if text.endswith((".", "!", "?")) else f"{text}."
