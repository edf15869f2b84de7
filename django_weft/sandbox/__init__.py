"""The sandbox: run stored modules that someone you do not trust wrote.

The host side (runner, pool, jobs, host functions, the save path of modules) runs in
the worker and uses Django. The child side (:mod:`.child`, :mod:`.restricted`,
:mod:`.layers`, :mod:`.seccomp`, :mod:`.protocol`) runs in a fresh ``python -I`` process
and imports only the standard library and RestrictedPython (the seccomp filter is built
with ctypes): it must set up its room before any untrusted byte arrives, and Django has
no business there.
"""
