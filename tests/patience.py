"""How long a test waits for what it expects: a deadline for an event, never a bound.

The suite must pass on a machine at a load of 10 on 2 cores (DESIGN §7), where a child
process takes seconds to start, a frame seconds to arrive and a page seconds to paint.
No test asserts how long something took on the wall clock; a test that waits for an
event waits up to :data:`EVENTUALLY`, and fails after it only when the event never comes.
"""

from __future__ import annotations

#: Seconds a test waits for an event it expects.
EVENTUALLY = 120.0
