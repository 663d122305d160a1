"""Show a plan's simulated timeline: as text (per stream, per sEU, one steady-state iteration) or a Gantt chart."""
from __future__ import annotations

from .cost import Estimate, Event

__all__ = ["steady_window", "text_timeline", "plot_timeline"]


def steady_window(est: Estimate) -> tuple[float, float]:
    """The cycle span of the last simulated iteration: what repeats in the steady state."""
    last = max(e.iteration for e in est.trace)
    ends = [e.end for e in est.trace if e.iteration == last]
    return max(ends) - est.cycles_per_iteration, max(ends)


def text_timeline(est: Estimate, width: int = 72) -> str:
    """One row per stream and sEU: which sTask occupies it in one steady-state iteration window."""
    if not est.trace:
        raise ValueError("estimate has no trace; call pt_tvm.cost.estimate(..., trace=True)")
    lo, hi = steady_window(est)
    span = max(hi - lo, 1.0)
    rows: dict[tuple[str, str], list[Event]] = {}
    for e in est.trace:
        if e.end > lo and e.start < hi:
            rows.setdefault((e.stream, e.seu.value), []).append(e)
    lines = [f"steady-state iteration: {est.cycles_per_iteration:.0f} cycles (window {lo:.0f}..{hi:.0f}); "
             f"each column = {span / width:.0f} cycles"]
    for (stream, seu), events in sorted(rows.items()):
        cells = [" "] * width
        labels = []
        for n, e in enumerate(sorted(events, key=lambda e: e.start)):
            a = max(0, int((e.start - lo) / span * width))
            b = min(width, max(a + 1, int((e.end - lo) / span * width)))
            mark = chr(ord("a") + n % 26)
            cells[a:b] = [mark] * (b - a)
            labels.append(f"{mark}={e.stask}@it{e.iteration}")
        lines.append(f"  {stream:<11}{seu:<12}|{''.join(cells)}|  " + " ".join(labels))
    return "\n".join(lines)


def plot_timeline(est: Estimate, path: str, title: str = "") -> None:
    """A Gantt chart of every simulated sTask instance (rows: stream x sEU) written to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted({(e.stream, e.seu.value) for e in est.trace})
    index = {r: i for i, r in enumerate(rows)}
    names = sorted({e.stask for e in est.trace})
    cmap = plt.get_cmap("tab20")
    color = {n: cmap(i % 20) for i, n in enumerate(names)}
    fig, ax = plt.subplots(figsize=(12, 0.5 * len(rows) + 1.5))
    for e in est.trace:
        ax.barh(index[(e.stream, e.seu.value)], e.end - e.start, left=e.start, color=color[e.stask],
                edgecolor="black", linewidth=0.3)
    ax.set_yticks(range(len(rows)), [f"{s} / {k}" for s, k in rows])
    ax.set_xlabel("cycles (simulated)")
    ax.set_title(title or f"simulated timeline: {est.cycles_per_iteration:.0f} cycles per iteration")
    handles = [plt.Rectangle((0, 0), 1, 1, color=color[n]) for n in names]
    ax.legend(handles, names, ncol=min(6, len(names)), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
