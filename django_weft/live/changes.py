"""What a step changed that live watchers should hear about once it has committed.

The run steps (start, claim, finish, fire, reap) and the documents' revisions write rows;
they do not publish, since publishing belongs to the layer above them. Each step notes
in a :class:`Changes` which runs and documents it touched, and whoever called it (the
worker loop, or :mod:`django_weft.operations` for every request) hands the note to
:func:`django_weft.live.publisher.publish`. The publisher reads every noted row again after
the commit, so a note about work that was rolled back publishes the row as it stands,
never what did not happen.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field


@dataclass
class Changes:
    """The runs and documents a step touched, in the order it touched them."""

    runs: dict[uuid.UUID, None] = field(default_factory=dict)
    documents: dict[int, None] = field(default_factory=dict)

    def run(self, run_id: uuid.UUID) -> None:
        self.runs[run_id] = None

    def document(self, document_id: int) -> None:
        self.documents[document_id] = None

    def __bool__(self) -> bool:
        return bool(self.runs or self.documents)
