"""Who may watch which application document in the example (WEFT_DOCUMENT_ACCESS)."""

from typing import Any

PUBLIC_DOCUMENTS = {"shell:entries", "content:ledger"}


def documents(user: Any, key: str) -> bool:
    """Every signed-in user may watch the shell's entries and the site's ledger."""
    return bool(user.is_authenticated and key in PUBLIC_DOCUMENTS)
