"""``RemoteMemoryClient``: the SDK over the REST service (httpx, synchronous).

This module has no source of its own: importing it runs ``sdk/remote_async.py`` rewritten
without async (:mod:`sdk._unasync`), so the sync client cannot drift from the async one.
Its types are in ``sdk/remote.pyi``, the same rewrite as source, a build artifact (``make
generate``, or the thin wheel's build hook).
"""

from sdk._unasync import sync_code

exec(sync_code(), globals())  # defines __all__, the clients and their docstrings
