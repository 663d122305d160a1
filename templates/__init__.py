"""TileLang kernel templates, each with its PyTorch reference (see :class:`Template`)."""
from __future__ import annotations

from .base import Template, TemplateError

__all__ = ["Template", "TemplateError", "get", "names"]


def _registry() -> dict[str, Template]:
    from . import flash_attention, gemm, mamba2

    return {t.name: t for t in (gemm.GEMM, gemm.GEMM_ROWSUM, flash_attention.FLASH_ATTENTION,
                                mamba2.CHUNK_STATE, mamba2.CHUNK_SCAN)}


def names() -> list[str]:
    """Registered template names."""
    return sorted(_registry())


def get(name: str) -> Template:
    """The template called ``name``; raises TemplateError naming the known ones."""
    reg = _registry()
    if name not in reg:
        raise TemplateError(f"unknown template {name!r} (known: {', '.join(sorted(reg))})")
    return reg[name]
