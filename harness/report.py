"""Run reports: rich tables on a console, and one self-contained HTML file.

The HTML page carries its own CSS and inline SVG and loads nothing (no scripts, no fonts, no
images), so it can be mailed, archived next to the run store or opened offline. Every piece of
stored text — instructions, arguments, envelopes, details — goes through ``html.escape``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from harness.metrics import agent_order, score_histogram, summary
from harness.store import RunStore
from harness.trajectory import ToolCall, Trajectory
from taskgen.task import Task

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]
ARGUMENT_CHARS = 1200
RESULT_CHARS = 2000
DIFF_PATHS = 20

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#1f2328;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem}
.muted{color:#656d76}table{border-collapse:collapse;margin:.6rem 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:right;vertical-align:top}
th{background:#f6f8fa}td.l,th.l{text-align:left}
pre{background:#f6f8fa;border:1px solid #e1e4e8;border-radius:4px;padding:.5rem;overflow-x:auto;
white-space:pre-wrap;word-break:break-word;margin:.3rem 0;font-size:12px}
.swatch{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.35em;vertical-align:-1px}
.instruction{background:#fff8c5;border-left:4px solid #d4a72c;padding:.6rem .9rem;white-space:pre-wrap}
ol.timeline{list-style:none;padding-left:1.2rem;border-left:3px solid #d0d7de;margin-left:.4rem}
ol.timeline li{position:relative;margin:0 0 1rem .6rem}
ol.timeline li::before{content:"";position:absolute;left:-1.45rem;top:.3rem;width:.7rem;height:.7rem;
border-radius:50%;background:#1a7f37}
ol.timeline li.err::before{background:#cf222e}
.badge{display:inline-block;border-radius:3px;padding:0 .4rem;font-size:12px;color:#fff}
.ok{background:#1a7f37}.fail{background:#cf222e}.tag{background:#6e7781}
code{font-size:12.5px}.error{color:#cf222e}ul.diff{margin:.2rem 0;font-family:monospace;font-size:12px}
"""


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * float(value):.0f}%"


def _curve(values: Mapping[str, float]) -> str:
    return " ".join(_fmt(v) for _, v in sorted(values.items(), key=lambda kv: int(kv[0]))) or "–"


def _finish(reasons: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in reasons.items())


def _kind_rows(figures: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    rows = {(kind, side) for f in figures.values() for kind, sides in f["criteria_by_kind"].items() for side in sides}
    return sorted(rows)


def _services(figures: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return sorted({s for f in figures.values() for s in f["services"]})


# -- console ------------------------------------------------------------------------------------


def print_report(store: RunStore, run: str, console: Console) -> None:
    """Print the run's figures: one row per agent, then criterion kinds and services."""
    figures = summary(store, run)
    if not figures:
        console.print(f"run {run!r} has no episodes")
        return
    main = Table(title=f"run {run}")
    for column in ("agent", "episodes", "tasks", "score", "net", "success", "pass@k", "pass^k", "calls/ep", "tool err"):
        main.add_column(column, justify="left" if column == "agent" else "right")
    main.add_column("finish")
    for agent, f in figures.items():
        main.add_row(
            agent,
            str(f["episodes"]),
            str(f["tasks"]),
            _fmt(f["mean_score"]),
            _fmt(f["mean_net_score"]),
            _pct(f["success_rate"]),
            _curve(f["pass_at_k"]),
            _curve(f["pass_hat_k"]),
            _fmt(f["mean_calls"], 1),
            _pct(f["tool_error_rate"]),
            _finish(f["finish_reasons"]),
        )
    console.print(main)
    console.print("pass@k and pass^k list k = 1, 2, … up to the rollouts per task.", style="dim")

    kinds = Table(title="criterion pass rate by kind")
    kinds.add_column("kind")
    for agent in figures:
        kinds.add_column(agent, justify="right")
    for kind, side in _kind_rows(figures):
        cells = [figures[a]["criteria_by_kind"].get(kind, {}).get(side) for a in figures]
        kinds.add_row(f"{kind} ({side})", *(f"{_pct(c['rate'])} of {c['n']}" if c else "–" for c in cells))
    console.print(kinds)

    services = Table(title="per service: criteria passed · calls · tool errors")
    services.add_column("service")
    for agent in figures:
        services.add_column(agent, justify="right")
    for service in _services(figures):
        cells = [figures[a]["services"].get(service) for a in figures]
        services.add_row(
            service,
            *(f"{_pct(c['criteria_pass_rate'])} · {c['calls']} · {_pct(c['error_rate'])}" if c else "–" for c in cells),
        )
    console.print(services)


# -- HTML ---------------------------------------------------------------------------------------

e = html.escape


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """A table from already-escaped cells; the first ``left`` columns are left-aligned."""
    cls = [' class="l"' if i < left else "" for i in range(len(head))]
    out = ["<table><tr>", *(f"<th{cls[i]}>{h}</th>" for i, h in enumerate(head)), "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td{cls[i]}>{c}</td>" for i, c in enumerate(row)) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _swatch(colour: str) -> str:
    return f'<span class="swatch" style="background:{colour}"></span>'


def _summary_html(figures: Mapping[str, Mapping[str, Any]], colours: Mapping[str, str]) -> str:
    head = ["agent", "episodes", "tasks", "mean score", "mean net score", "success", "calls / episode"]
    head += ["tool errors", "finish reasons"]
    rows = [
        [
            _swatch(colours[a]) + e(a),
            str(f["episodes"]),
            str(f["tasks"]),
            _fmt(f["mean_score"], 3),
            _fmt(f["mean_net_score"], 3),
            _pct(f["success_rate"]),
            _fmt(f["mean_calls"], 1),
            f"{f['tool_errors']} ({_pct(f['tool_error_rate'])})",
            e(_finish(f["finish_reasons"])),
        ]
        for a, f in figures.items()
    ]
    top = max((len(f["pass_at_k"]) for f in figures.values()), default=0)
    ks = [str(k) for k in range(1, top + 1)]
    curve_rows = [
        [e(a), *(_fmt(f["pass_at_k"].get(k), 3) for k in ks), *(_fmt(f["pass_hat_k"].get(k), 3) for k in ks)]
        for a, f in figures.items()
    ]
    curves = _table(["agent", *(f"pass@{k}" for k in ks), *(f"pass^{k}" for k in ks)], curve_rows)
    return f"<h2>Summary</h2>{_table(head, rows)}<h3>pass@k and pass^k (unbiased, k ≤ rollouts)</h3>{curves}"


def _histogram_svg(scores: Mapping[str, Sequence[float]], colours: Mapping[str, str]) -> str:
    """Grouped bars: episodes per score bin of width 0.1, one colour per agent."""
    counts = {a: score_histogram(s) for a, s in scores.items()}
    bins = len(next(iter(counts.values()), [0] * 10))
    width, height, left, right, top, bottom = 760, 300, 46, 150, 16, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((c for row in counts.values() for c in row), default=0) or 1
    group = plot_w / bins
    bar = group * 0.84 / max(1, len(counts))
    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" font-size="11">']
    parts.append(f"<title>{e('Score distribution per agent')}</title>")
    for tick in sorted({0, peak // 2, peak}):
        y = top + plot_h - plot_h * tick / peak
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e1e4e8"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>')
    for i in range(bins + 1):
        x = left + i * group
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{i / bins:.1f}</text>')
    for j, (agent, row) in enumerate(counts.items()):
        for i, count in enumerate(row):
            if not count:
                continue
            h = plot_h * count / peak
            x = left + i * group + group * 0.08 + j * bar
            close = "]" if i == bins - 1 else ")"
            label = e(f"{agent}: {count} episode(s) with score in [{i / bins:.1f}, {(i + 1) / bins:.1f}{close}")
            parts.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{colours[agent]}"><title>{label}</title></rect>'
            )
        ly = top + 8 + 18 * j
        parts.append(f'<rect x="{left + plot_w + 16}" y="{ly - 9}" width="11" height="11" fill="{colours[agent]}"/>')
        parts.append(f'<text x="{left + plot_w + 32}" y="{ly}">{e(agent)}</text>')
    parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#57606a"/>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">score</text>')
    parts.append(f'<text x="12" y="{top + plot_h / 2:.1f}" transform="rotate(-90 12 {top + plot_h / 2:.1f})" ')
    parts.append('text-anchor="middle">episodes</text></svg>')
    return "<h2>Score distribution</h2>" + "".join(parts)


def _kinds_html(figures: Mapping[str, Mapping[str, Any]]) -> str:
    rows = []
    for kind, side in _kind_rows(figures):
        cells = [figures[a]["criteria_by_kind"].get(kind, {}).get(side) for a in figures]
        rows.append([e(kind), e(side), *(f"{_pct(c['rate'])} of {c['n']}" if c else "–" for c in cells)])
    return "<h2>Criterion pass rate by kind</h2>" + _table(["kind", "side", *map(e, figures)], rows, left=2)


def _services_html(figures: Mapping[str, Mapping[str, Any]]) -> str:
    head = ["service"]
    for agent in figures:
        head += [f"{e(agent)}: criteria passed", f"{e(agent)}: calls", f"{e(agent)}: tool errors"]
    rows = []
    for service in _services(figures):
        row = [e(service)]
        for agent in figures:
            c = figures[agent]["services"].get(service)
            if c is None:
                row += ["–", "–", "–"]
            else:
                passed = f"{_pct(c['criteria_pass_rate'])} of {c['criteria']}" if c["criteria"] else "–"
                row += [passed, str(c["calls"]), f"{c['errors']} ({_pct(c['error_rate'])})" if c["calls"] else "–"]
        rows.append(row)
    note = '<p class="muted">(none): discovery calls and criteria on the final report.</p>'
    return "<h2>Per service</h2>" + _table(head, rows) + note


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def _pretty(value: Any, limit: int) -> str:
    return e(_clip(json.dumps(value, indent=2, ensure_ascii=False, default=str), limit))


def _call_html(call: ToolCall) -> str:
    badge = '<span class="badge ok">ok</span>' if call.ok else '<span class="badge fail">error</span>'
    tags = " ".join(f'<span class="badge tag">{e(t)}</span>' for t in (call.service, call.kind) if t)
    head = f"<div><b>#{call.index + 1}</b> {tags} <code>{e(call.name)}</code>"
    if call.tool and call.tool != call.name:
        head += f" → <code>{e(call.tool)}</code>"
    head += f" {badge} <span class='muted'>{call.latency_ms:.2f} ms</span></div>"
    body = [head, f"<pre>{_pretty(call.arguments, ARGUMENT_CHARS)}</pre>"]
    if not call.ok:
        error = call.envelope.get("error") or {}
        code, message = (error.get("code"), error.get("message")) if isinstance(error, dict) else (None, error)
        body.append(f'<div class="error">{e(str(code or ""))} {e(str(message or ""))}</div>')
    if call.diff:
        paths = "".join(f"<li>{e(c.op)} {e(c.path)}</li>" for c in call.diff[:DIFF_PATHS])
        more = f"<li>… {len(call.diff) - DIFF_PATHS} more</li>" if len(call.diff) > DIFF_PATHS else ""
        body.append(f'<div>state changes:</div><ul class="diff">{paths}{more}</ul>')
    body.append(f"<details><summary>result</summary><pre>{_pretty(call.envelope, RESULT_CHARS)}</pre></details>")
    return f'<li class="{"ok" if call.ok else "err"}">{"".join(body)}</li>'


def _trajectory_html(trajectory: Trajectory, task: Task | None) -> str:
    instruction = (
        task.instruction
        if task
        else next((str(m.get("content", "")) for m in trajectory.messages if m.get("role") == "user"), "")
    )
    facts = (
        f"task <code>{e(trajectory.task_id)}</code> · agent <b>{e(trajectory.agent)}</b> · surface "
        f"{e(trajectory.surface)} · rollout {trajectory.rollout} · score {trajectory.score:.3f} · net "
        f"{trajectory.net_score:.3f} · finish {e(trajectory.finish_reason)} · {len(trajectory.tool_calls)} call(s), "
        f"{trajectory.n_errors} error(s)"
    )
    parts = [f"<h2>One trajectory</h2><p class='muted'>{facts}</p>", f'<div class="instruction">{e(instruction)}</div>']
    if trajectory.error:
        parts.append(f'<p class="error">{e(trajectory.error)}</p>')
    calls = "".join(_call_html(c) for c in trajectory.tool_calls) or "<li>no tool calls</li>"
    parts.append(f'<h3>Tool calls</h3><ol class="timeline">{calls}</ol>')
    final = next(
        (str(m.get("content") or "") for m in reversed(trajectory.messages) if m.get("role") == "assistant"), ""
    )
    parts.append(f"<h3>Final message and report</h3><pre>{e(_clip(final, RESULT_CHARS))}</pre>")
    parts.append(f"<pre>{_pretty(trajectory.report, RESULT_CHARS)}</pre>")
    criteria = {c.id: c for c in task.rubric.criteria} if task else {}
    rows = []
    for result in trajectory.criteria:
        spec = criteria.get(result.id)
        verdict = '<span class="badge ok">pass</span>' if result.passed else '<span class="badge fail">fail</span>'
        rows.append(
            [
                e(result.id),
                e(spec.kind if spec else ""),
                "negative" if result.negative else "positive",
                verdict,
                _fmt(result.weight),
                e(result.detail),
                e(spec.description if spec else ""),
            ]
        )
    head = ["criterion", "kind", "side", "passed", "weight", "detail", "description"]
    parts.append("<h3>Rubric</h3>" + _table(head, rows, left=len(head)))
    return "".join(parts)


def pick_episode(store: RunStore, run: str) -> dict[str, Any] | None:
    """The episode the HTML report shows: the first agent other than ``null`` (run order), its
    first episode with tool calls, else its first episode; any episode when only ``null`` ran."""
    episodes = store.episodes(run)
    order = [a for a in agent_order(store, run) if a != "null"]
    order += sorted({r["agent"] for r in episodes if r["agent"] != "null"} - set(order))
    for agent in order:
        mine = [r for r in episodes if r["agent"] == agent]
        if mine:
            return next((r for r in mine if r["n_calls"]), mine[0])
    return episodes[0] if episodes else None


def render_html(store: RunStore, run: str) -> str:
    figures = summary(store, run)
    colours = {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(figures)}
    scores: dict[str, list[float]] = {a: [] for a in figures}
    for row in store.episodes(run):
        scores[row["agent"]].append(float(row["score"]))
    tasks = store.tasks(run)
    body = [f"<h1>CompoWorld run {e(run)}</h1>"]
    body.append(f"<p class='muted'>{len(tasks)} task(s) · {sum(len(s) for s in scores.values())} episode(s)</p>")
    if figures:
        body += [_summary_html(figures, colours), _histogram_svg(scores, colours)]
        body += [_kinds_html(figures), _services_html(figures)]
    else:
        body.append("<p>No episodes stored for this run.</p>")
    chosen = pick_episode(store, run)
    if chosen is not None:
        trajectory = Trajectory.model_validate_json(chosen["trajectory"])
        body.append(_trajectory_html(trajectory, tasks.get(trajectory.task_id)))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>CompoWorld run {e(run)}</title><style>{CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def write_html(store: RunStore, run: str, path: str | Path) -> Path:
    """Write the run's report as one self-contained HTML file; returns its path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(store, run), encoding="utf-8")
    return target
