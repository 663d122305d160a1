"""TileLang kernel templates, each with its PyTorch reference (see :class:`Template`)."""
from __future__ import annotations

from . import conv1d, decode_attention, flash_attention, gemm, mamba2
from .base import Template, TemplateError

__all__ = ["Template", "TemplateError", "get", "names"]

_REGISTRY: dict[str, Template] = {t.name: t for t in (gemm.GEMM, gemm.GEMM_ROWSUM, gemm.GEMM_SWIGLU, gemm.GEMM_ROPE,
                                                      flash_attention.FLASH_ATTENTION,
                                                      flash_attention.FLASH_ATTENTION_QKV,
                                                      flash_attention.FLASH_ATTENTION_VARLEN,
                                                      mamba2.CHUNK_STATE, mamba2.CHUNK_SCAN,
                                                      decode_attention.DECODE_ATTENTION,
                                                      conv1d.CAUSAL_CONV1D)}


def names() -> list[str]:
    """Registered template names."""
    return sorted(_REGISTRY)


def get(name: str) -> Template:
    """The template called ``name``; raises TemplateError naming the known ones."""
    reg = _REGISTRY
    if name not in reg:
        raise TemplateError(f"unknown template {name!r} (known: {', '.join(sorted(reg))})")
    return reg[name]
