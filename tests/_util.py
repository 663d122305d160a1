"""Helpers shared by the test files."""
import functools

from pt_tvm.templates import get


@functools.lru_cache(maxsize=None)
def _build(template: str, params: tuple):
    return get(template).build(**dict(params))


def built(template: str, **params):
    """A template's PrimFunc, built once per parameter set for the whole test session."""
    return _build(template, tuple(sorted(params.items())))
