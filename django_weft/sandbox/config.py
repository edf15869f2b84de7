"""What a sandbox child is set up with, read from the ``WEFT_SANDBOX_*`` settings.

A :class:`RoomConfig` is read at each call, so a settings change takes effect at the
next call; a pooled child set up under another config is discarded, never used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django_weft.conf import weft_settings
from django_weft.sandbox.protocol import Limits

#: Largest call frame (source and args) the host sends a child.
CALL_LIMIT = 16 * 1024 * 1024

#: Room a frame from the child needs beyond its answer and output.
FRAME_OVERHEAD = 64 * 1024

#: Seconds a child may take to set up before the host gives up on it.
SETUP_SECONDS = 30.0


@dataclass(frozen=True)
class RoomConfig:
    """Everything a child is set up with, and what the host holds it to."""

    imports: tuple[str, ...]
    #: ``WEFT_SANDBOX_IMPORT_NAMES``, as pairs so the config stays hashable.
    import_names: tuple[tuple[str, tuple[str, ...]], ...]
    layers: tuple[str, ...]
    required_layers: tuple[str, ...]
    limits: Limits
    wall_seconds: float
    #: Whether a module may run where the layers that contain it are not all active
    #: (``WEFT_SANDBOX_UNSAFE_UNCONTAINED``); the host's to enforce, not the child's.
    unsafe_uncontained: bool = False
    #: Whether the child runs the module under RestrictedPython, its guards and the audit
    #: hook. Only code sets it off, to test the kernel layers alone: no setting reads
    #: into it, and it travels in the setup frame, which no module writes.
    python_layers: bool = True

    @classmethod
    def from_settings(cls) -> RoomConfig:
        return cls(
            imports=weft_settings.SANDBOX_IMPORTS,
            import_names=tuple(sorted(weft_settings.SANDBOX_IMPORT_NAMES.items())),
            layers=weft_settings.SANDBOX_LAYERS,
            required_layers=weft_settings.SANDBOX_REQUIRED_LAYERS,
            limits=Limits(
                cpu_seconds=weft_settings.SANDBOX_CPU_SECONDS,
                memory_bytes=weft_settings.SANDBOX_MEMORY_BYTES,
                output_bytes=weft_settings.SANDBOX_MAX_OUTPUT_BYTES,
                answer_bytes=weft_settings.SANDBOX_MAX_ANSWER_BYTES,
            ),
            wall_seconds=weft_settings.SANDBOX_WALL_SECONDS,
            unsafe_uncontained=weft_settings.SANDBOX_UNSAFE_UNCONTAINED,
        )

    def setup_frame(self) -> dict[str, Any]:
        """The first frame a child reads: the bubblewrap layer is the host's, not its own."""
        return {
            "type": "setup",
            "imports": list(self.imports),
            "import_names": {module: list(names) for module, names in self.import_names},
            "layers": [name for name in self.layers if name != "bubblewrap"],
            "limits": self.limits.as_dict(),
            "call_limit": CALL_LIMIT,
            "python_layers": self.python_layers,
        }

    @property
    def frame_limit(self) -> int:
        """Largest frame the host reads from a child: an answer and its output, escaped."""
        return self.limits.answer_bytes + self.limits.output_bytes * 6 + FRAME_OVERHEAD
