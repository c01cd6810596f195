"""ipywidgets wiring for the live explorers of notebook 10. All logic lives in :mod:`evidence_lib.course.explore`.

Each factory returns a small object, not a bare widget: it displays as the widget (a ``VBox``),
has a stable ``text/plain`` repr (what nbval compares; no model ids or memory addresses), lets
code set values with ``.set(...)`` and reads the resulting state back with ``.state_text()``.
The displayed numbers live in an ``HTML`` widget with a known CSS class, so a browser test can
read them: ``.evidence-context-numbers``, ``.evidence-stepper-state``, ``.evidence-ledger-state``.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w

from .._ledger import Budget
from .._tools import MAX_PAGE_CHARS
from .explore import LEDGER_SCRIPTS, MAX_READS, ContextModel, ContextPoint, LedgerRun, Stepper, ledger_run

#: Byte budgets offered by the explorer (0 means no ledger at all).
BUDGET_CHOICES: tuple[tuple[str, int], ...] = (
    ("no budget", 0), ("2,000 bytes", 2_000), ("4,000 bytes", 4_000), ("8,000 bytes", 8_000),
    ("16,000 bytes", 16_000), ("32,000 bytes", 32_000),
)
_SLIDER = {"continuous_update": False, "style": {"description_width": "150px"}, "layout": {"width": "540px"}}
_PRE = "font-family: var(--jp-code-font-family, monospace); font-size: 12px; white-space: pre-wrap; margin: 4px 0"
_COLORS = {"baseline": "#d62728", "protocol": "#1f77b4"}


def _bar(value: int, scale: int, color: str) -> str:
    pct = 0.0 if scale <= 0 else min(100.0, 100.0 * value / scale)
    return (f'<div style="background:#eee;width:420px;height:14px">'
            f'<div style="background:{color};height:14px;width:max(2px,{pct:.3f}%)"></div></div>')


class _Live:
    """Shared behaviour: display as ``self.widget``, stable plain-text repr, set values from code."""

    title = ""
    controls: dict[str, w.ValueWidget]

    def __init__(self, css_class: str, state_class: str) -> None:
        self.state = w.HTML()
        self.state.add_class(state_class)
        self.widget = w.VBox([w.HTML(f"<b>{html.escape(self.title)}</b>"), *self.controls.values(), self.state])
        self.widget.add_class(css_class)
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        self._changed()

    def set(self, **values: Any) -> _Live:
        """Set controls by name (as a learner would move them); the display updates at once."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise KeyError(f"unknown control(s) {unknown}; known: {sorted(self.controls)}")
        for name, value in values.items():
            self.controls[name].value = value
        return self

    def values(self) -> dict[str, Any]:
        return {name: c.value for name, c in self.controls.items()}

    def state_text(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def _changed(self, change: Any = None) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v!r}" for k, v in self.values().items())
        return f"<{type(self).__name__}: {settings}; call .set(...) and .state_text()>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, Any]:
        data = self.widget._repr_mimebundle_(include=include, exclude=exclude, **kwargs)
        data["text/plain"] = repr(self)
        return data


class ContextExplorer(_Live):
    """top_k, page limit, reads and a byte budget → baseline vs protocol bytes and tokens, as bars."""

    title = "Context size: baseline dump vs search + locate + reads"

    def __init__(self, model: ContextModel | None = None) -> None:
        self.model = model if model is not None else ContextModel()
        self.controls = {
            "top_k": w.IntSlider(12, min=1, max=self.model.max_top_k, description="top_k candidates", **_SLIDER),
            "page_limit": w.IntSlider(300, min=1, max=MAX_PAGE_CHARS, description="page limit (chars)", **_SLIDER),
            "reads": w.IntSlider(1, min=0, max=min(12, MAX_READS), description="read calls", **_SLIDER),
            "budget": w.Dropdown(options=BUDGET_CHOICES, value=0, description="byte budget",
                                 style=_SLIDER["style"]),
        }
        super().__init__("evidence-context-explorer", "evidence-context-numbers")

    @property
    def point(self) -> ContextPoint:
        v = self.values()
        return self.model.point(v["top_k"], v["page_limit"], v["reads"], v["budget"] or None)

    def numbers(self) -> dict[str, int | bool]:
        return self.point.numbers()

    def state_text(self) -> str:
        return self.point.summary()

    def _changed(self, change: Any = None) -> None:
        p = self.point
        scale = p.scale_bytes
        yes = {True: "yes", False: "<b>no</b>"}
        rows = []
        for kind, size, label in (("baseline", p.baseline, f"baseline: {p.top_k} full texts"),
                                  ("protocol", p.protocol, f"protocol: {len(p.steps)} tool calls")):
            rows.append(
                f'<tr><td style="padding-right:12px">{label}</td>'
                f'<td style="text-align:right;padding-right:12px"><span class="ev-{kind}-bytes">'
                f'{size.utf8_bytes:,}</span> B</td>'
                f'<td style="text-align:right;padding-right:12px"><span class="ev-{kind}-tokens">'
                f'{size.cl100k_tokens:,}</span> tok</td>'
                f'<td>{_bar(size.utf8_bytes, scale, _COLORS[kind])}</td></tr>')
        self.state.value = (
            f'<table>{"".join(rows)}</table>'
            f'<div>protocol = <span class="ev-share">{p.byte_share_percent:.2f}</span>% of the baseline\'s bytes'
            f' · answer in baseline: {yes[p.answer_in_baseline]} · in manifest: {yes[p.answer_in_manifest]}'
            f' · reached by the reads: <span class="ev-answer-reached">{yes[p.answer_reached]}</span>'
            f' · reads returning text: {p.reads_ok} · refused calls: {p.refused}</div>')


class ToolCallStepper(_Live):
    """Step through search → locate → read (→ more pages): each ToolMessage and the running total."""

    title = "Tool-call stepper: one ToolMessage at a time"

    def __init__(self, model: ContextModel | None = None) -> None:
        self.stepper = Stepper(model)
        self.controls = {
            "page_limit": w.IntSlider(300, min=1, max=MAX_PAGE_CHARS, description="page limit (chars)", **_SLIDER),
            "reads": w.IntSlider(1, min=0, max=6, description="read calls", **_SLIDER),
            "step": w.IntSlider(0, min=0, max=len(self.stepper.steps), description="step", **_SLIDER),
        }
        self.next_button = w.Button(description="Next step", icon="step-forward")
        self.reset_button = w.Button(description="Reset", icon="undo")
        self.next_button.on_click(lambda _: self.next())
        self.reset_button.on_click(lambda _: self.set(step=0))
        super().__init__("evidence-tool-stepper", "evidence-stepper-state")
        self.widget.children = (*self.widget.children[:-1], w.HBox([self.next_button, self.reset_button]),
                                self.state)

    def next(self) -> None:
        """Advance one step (what the Next button does)."""
        step = self.controls["step"]
        step.value = min(step.max, step.value + 1)

    def state_text(self) -> str:
        return self.stepper.summary()

    def _changed(self, change: Any = None) -> None:
        v = self.values()
        if (v["page_limit"], v["reads"]) != (self.stepper.page_limit, self.stepper.reads):
            self.stepper.configure(v["page_limit"], v["reads"])
            self.controls["step"].max = len(self.stepper.steps)  # clamps the value, which calls us again
        self.stepper.go(self.controls["step"].value)
        s = self.stepper
        rows = "".join(
            f'<tr><td>{t.step}</td><td><code>{html.escape(t.name)}({html.escape(t.args_text())})</code></td>'
            f'<td>{html.escape(t.status)}</td><td style="text-align:right">{t.size.utf8_bytes:,} B</td>'
            f'<td style="text-align:right">{t.size.cl100k_tokens:,} tok</td>'
            f'<td style="text-align:right"><b>{t.total_bytes:,} B</b></td></tr>'
            for t in s.steps[: s.position])
        cur = s.current
        total = cur.total_bytes if cur else 0
        message = (f'<div>ToolMessage <code>{html.escape(cur.message.tool_call_id)}</code>, status '
                   f'<code>{html.escape(str(cur.message.status))}</code>:</div>'
                   f'<pre style="{_PRE};max-height:160px;overflow:auto">{html.escape(str(cur.message.content))}</pre>'
                   if cur else "<div>No call yet: press <b>Next step</b>.</div>")
        self.state.value = (
            f'<div>step <span class="ev-step">{s.position}</span> of {len(s.steps)} · running total '
            f'<span class="ev-total-bytes">{total:,}</span> UTF-8 bytes, '
            f'<span class="ev-total-tokens">{cur.total_tokens if cur else 0:,}</span> cl100k tokens</div>'
            f'{_bar(total, 12_000, _COLORS["protocol"])}'
            f'<table><tr><th>#</th><th>call</th><th>status</th><th>bytes</th><th>tokens</th><th>total</th></tr>'
            f'{rows}</table>{message}')


class LedgerPlayground(_Live):
    """A read script under a Budget: which calls are ok, already_read or budget_exhausted, and the totals."""

    title = "Ledger playground: one budget for the whole task"

    def __init__(self) -> None:
        default = Budget()
        self.controls = {
            "script": w.Dropdown(options=list(LEDGER_SCRIPTS), value="tiny-read loop", description="read script",
                                 style=_SLIDER["style"]),
            "max_calls": w.IntSlider(default.max_calls, min=1, max=20, description="max calls", **_SLIDER),
            "max_bytes": w.IntSlider(default.max_bytes, min=500, max=20_000, step=500, description="max bytes",
                                     **_SLIDER),
            "max_reads_per_doc": w.IntSlider(default.max_reads_per_doc, min=1, max=8,
                                             description="max reads / doc", **_SLIDER),
        }
        super().__init__("evidence-ledger-playground", "evidence-ledger-state")

    @property
    def budget(self) -> Budget:
        v = self.values()
        return Budget(max_calls=v["max_calls"], max_bytes=v["max_bytes"], max_reads_per_doc=v["max_reads_per_doc"])

    @property
    def run(self) -> LedgerRun:
        return ledger_run(self.controls["script"].value, self.budget)

    def state_text(self) -> str:
        return self.run.summary()

    def _changed(self, change: Any = None) -> None:
        r = self.run
        colors = {"ok": "#2ca02c", "already_read": "#ff7f0e"}
        rows = "".join(
            f'<tr><td>{s.step}</td><td><code>{html.escape(s.args_text())}</code></td>'
            f'<td style="color:{colors.get(s.status, "#d62728")}">{html.escape(s.status)}'
            f'{" (" + html.escape(s.reason) + ")" if s.reason else ""}</td>'
            f'<td style="text-align:right">{s.size.utf8_bytes:,} B</td></tr>'
            for s in r.steps)
        t, lim = r.totals(), r.ledger.limits()
        spent = " · ".join(f"{k} <span class=\"ev-spent-{k}\">{t[k]:,}</span>"
                           + (f"/{lim[k]:,}" if lim[k] is not None else "") for k in t)
        counts = " · ".join(f"{k}: <span class=\"ev-count-{k}\">{v}</span>" for k, v in r.status_counts().items())
        self.state.value = (f'<table><tr><th>#</th><th>read_evidence args</th><th>status</th>'
                            f'<th>model sees</th></tr>{rows}</table>'
                            f'<div>charged: {spent}</div>{_bar(t["bytes"], lim["bytes"] or 1, "#2ca02c")}'
                            f'<div>{counts}</div>')


def context_explorer(model: ContextModel | None = None) -> ContextExplorer:
    """The context-size explorer (notebook 10)."""
    return ContextExplorer(model)


def tool_call_stepper(model: ContextModel | None = None) -> ToolCallStepper:
    """The tool-call stepper (notebook 10)."""
    return ToolCallStepper(model)


def ledger_playground() -> LedgerPlayground:
    """The ledger playground (notebook 10)."""
    return LedgerPlayground()
