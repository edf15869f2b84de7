"""How the OpenAPI schema describes a row that is shown in the owner or the guest view.

drf-spectacular cannot look inside :class:`~django_weft.api.serializers.ViewerSerializer`,
which picks a serializer per object; this extension tells it the answer is either one.
``anyOf``, not ``oneOf``: the owner view has every field of the guest view, so an
owner's row matches both.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from drf_spectacular.extensions import OpenApiSerializerExtension

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction


# Subclassing registers the extension; drf-spectacular's __init_subclass__ is untyped.
class ViewerSerializerExtension(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    target_class = "django_weft.api.serializers.ViewerSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        target = self.target
        views = [target.owner_class, target.guest_class]
        return {
            "description": inspect.getdoc(target) or "",
            "anyOf": [auto_schema.resolve_serializer(view, direction).ref for view in views],
        }
