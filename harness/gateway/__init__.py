"""The model gateway: run tokens in, real provider keys (or a scripted model) out.

Django-free.  :mod:`.registry` is the worker's side (register a run, read its usage),
:mod:`.server` the gateway process, :mod:`.upstreams` where requests go, :mod:`.protocols`
the four wire formats, :mod:`.scripted` the deterministic model.  See docs/gateway.md.
"""
