"""Document access policies the tests switch on with WEFT_DOCUMENT_ACCESS."""

from typing import Any


def shell_documents(user: Any, key: str) -> bool:
    """Any signed-in user may watch the shell's entries."""
    return bool(user.is_authenticated and key.startswith("shell:"))
