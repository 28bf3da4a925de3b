#!/usr/bin/env python3
"""Turn `arcus field-test` logs into one self-contained HTML report.

    python3 Tools/field-report.py LOG [LOG ...] --out report.html

Each LOG is the JSON lines file of one recording (one device, one run). The report groups them
by agent: a table of the runs, a summary per (agent, peer, transport) (samples, time active,
RTT p50/p95/max, goodput mean/max, reconnects, failovers) and, per link, SVG plots of RTT and
goodput over time with one line per run. Python 3 standard library only (CI has no
matplotlib); the plots are inline SVG, so the file needs nothing else to open.

Malformed lines are skipped and counted, with a warning. A missing file, or a file with no
samples, is an error (exit status 2): a report silently missing a device would mislead.
"""

import argparse
import html
import json
import math
import os
import sys
from collections import defaultdict

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


class ReportError(Exception):
    """Bad input a person has to fix; printed without a traceback, exit status 2."""


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Run:
    """One log file: its start and end events and its samples."""

    def __init__(self, path):
        self.path = path
        self.start = None
        self.end = None
        self.samples = []
        self.unreachable = 0
        self.malformed = 0
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError as error:
            raise ReportError(f"{path}: cannot read it ({error.strerror or error})")
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                self.malformed += 1
                continue
            if not isinstance(record, dict) or not is_number(record.get("t")):
                self.malformed += 1
            elif record.get("event") == "start":
                self.start = record
            elif record.get("event") == "end":
                self.end = record
            elif record.get("event") == "unreachable":
                self.unreachable += 1
            elif "event" in record:
                pass  # an event a later arcus writes; nothing to plot
            elif all(isinstance(record.get(key), str) for key in ("agent", "peer", "transport")):
                self.samples.append(record)
            else:
                self.malformed += 1
        if self.malformed:
            print(f"field-report: warning: {path}: skipped {self.malformed} malformed line(s)", file=sys.stderr)
        if not self.samples:
            raise ReportError(f"{path}: no samples (is it an `arcus field-test --out` log, and did the agent have links?)")

    @property
    def agent(self):
        first = self.start or self.samples[0]
        return first.get("agent") or self.samples[0]["agent"]

    @property
    def agent_peer(self):
        return (self.start or self.samples[0]).get("agent_peer", "")

    @property
    def interval(self):
        """The interval between readings: as the run was asked for, else as the samples show it."""
        settings = (self.start or {}).get("settings") or {}
        if is_number(settings.get("interval")) and settings["interval"] > 0:
            return settings["interval"]
        times = sorted({sample["t"] for sample in self.samples})
        steps = [b - a for a, b in zip(times, times[1:])]
        return sorted(steps)[len(steps) // 2] if steps else None

    @property
    def label(self):
        return os.path.basename(self.path)


def percentile(values, share):
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def figure(value, unit=""):
    """A figure as a person reads it: 0.5, 17, 420, 1.2 k, 3.40 M."""
    if value is None:
        return "–"
    suffix = f" {unit}" if unit else ""
    if abs(value) >= 1e6:
        return f"{value / 1e6:.2f} M{unit}"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.1f} k{unit}"
    if abs(value) >= 100 or value == int(value):
        return f"{value:.0f}{suffix}"
    return f"{value:.1f}{suffix}"


class Link:
    """The samples of one (agent, peer, transport), from every run that has it."""

    def __init__(self, agent, peer, transport):
        self.agent, self.peer, self.transport = agent, peer, transport
        self.peer_name = None
        self.by_run = defaultdict(list)  # Run -> samples

    def add(self, run, sample):
        self.by_run[run].append(sample)
        self.peer_name = sample.get("peer_name") or self.peer_name

    @property
    def samples(self):
        return [sample for samples in self.by_run.values() for sample in samples]

    def column(self, key):
        return [sample[key] for sample in self.samples if is_number(sample.get(key))]

    def counted(self, key):
        """Reconnects and failovers count from each run's start: the total is the sum of each run's last figure."""
        return sum(max((s[key] for s in samples if is_number(s.get(key))), default=0) for samples in self.by_run.values())

    def summary_cells(self):
        samples = self.samples
        rtt, goodput, rssi = self.column("rtt_ms"), self.column("goodput_bps"), self.column("rssi_dbm")
        active = sum(1 for sample in samples if sample.get("active") is True)
        cells = [
            html.escape(self.peer_name or "?"), f"<code>{html.escape(self.peer)}</code>", html.escape(self.transport),
            str(len(samples)), f"{100 * active / len(samples):.0f}%",
            figure(percentile(rtt, 0.5)) if rtt else "–", figure(percentile(rtt, 0.95)) if rtt else "–",
            figure(max(rtt)) if rtt else "–",
            figure(sum(goodput) / len(goodput), "B/s") if goodput else "–", figure(max(goodput), "B/s") if goodput else "–",
            str(int(self.counted("reconnects"))), str(int(self.counted("failovers"))),
            f"{percentile(rssi, 0.5):.0f} ({min(rssi):.0f} to {max(rssi):.0f})" if rssi else "–",
        ]
        return "".join(f"<td>{cell}</td>" for cell in cells)


def with_gaps(samples, field, interval):
    """(t, value) points, with a None wherever the link was missing for more than one and a
    half intervals (the agent lost it, or did not answer), so that the plot shows the outage."""
    points, last = [], None
    for sample in samples:
        if last is not None and interval and sample["t"] - last > 1.5 * interval:
            points.append((last, None))
        points.append((sample["t"], sample[field] if is_number(sample.get(field)) else None))
        last = sample["t"]
    return points


def nice_step(span, ticks=5):
    raw = span / ticks if span > 0 else 1
    magnitude = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 2.5, 5, 10):
        if raw <= multiple * magnitude:
            return multiple * magnitude
    return 10 * magnitude


def svg_plot(title, unit, series, width=560, height=240):
    """A line plot: `series` is [(label, colour, [(t, value), ...])]; gaps (None) break the line."""
    left, right, top, bottom = 64, 16, 28, 40
    points = [(t, v) for _, _, line in series for t, v in line if v is not None]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{html.escape(title)}" font-family="sans-serif" font-size="11">',
             f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="13">{html.escape(title)}</text>']
    if not points:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="#888">no figures (null in every sample)</text></svg>')
        return "".join(parts)
    t_max = max(max(t for t, _ in points), 1e-9)
    # From zero up, or (for negative figures such as RSSI in dBm) from below the least up to zero.
    v_max = max(max(v for _, v in points), 0)
    v_min = min(min(v for _, v in points), 0)
    v_step = nice_step((v_max - v_min) if v_max > v_min else 1)
    v_top = v_step * math.ceil(v_max / v_step) if v_max > 0 else (0 if v_min < 0 else v_step * 5)
    v_bottom = v_step * math.floor(v_min / v_step) if v_min < 0 else 0
    t_step = nice_step(t_max)
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(t):
        return left + plot_w * t / t_max

    def y(v):
        return top + plot_h * (1 - (v - v_bottom) / (v_top - v_bottom))

    tick = float(v_bottom)
    while tick <= v_top + 1e-9:
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{figure(tick)}</text>')
        tick += v_step
    tick = 0.0
    while tick <= t_max + 1e-9:
        parts.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top + plot_h}" y2="{top + plot_h + 4}" stroke="#444"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{figure(tick)}</text>')
        tick += t_step
    parts.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#444"/>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#444"/>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">seconds since the start of the run</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2}" text-anchor="middle" transform="rotate(-90 14 {top + plot_h / 2})">{html.escape(unit)}</text>')
    for index, (label, colour, line) in enumerate(series):
        segments, current = [], []
        for t, v in line:
            if v is None:
                if current:
                    segments.append(current)
                current = []
            else:
                current.append(f"{x(t):.1f},{y(v):.1f}")
        if current:
            segments.append(current)
        for segment in segments:
            if len(segment) == 1:
                cx, cy = segment[0].split(",")
                parts.append(f'<circle cx="{cx}" cy="{cy}" r="2" fill="{colour}"/>')
            else:
                parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{" ".join(segment)}"/>')
        if len(series) > 1:
            parts.append(f'<text x="{width - right - 4}" y="{top + 12 + 13 * index}" text-anchor="end" fill="{colour}">{html.escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f4f4f4; } td:nth-child(-n+3) { text-align: left; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
.note { color: #666; font-size: 90%; }
"""


def report(runs):
    by_agent = defaultdict(list)
    for run in runs:
        by_agent[(run.agent, run.agent_peer)].append(run)
    body = ["<h1>Arcus field test</h1>",
            f"<p class=note>{len(runs)} log(s), {sum(len(run.samples) for run in runs)} samples. "
            "Goodput is per transport (both directions of arcus_link_bytes_total), not per peer. "
            "RSSI is the Bluetooth adapter's figure for the peer's adverts, plotted where a link has it.</p>"]
    for (agent, agent_peer), agent_runs in sorted(by_agent.items()):
        body.append(f"<h2>{html.escape(agent)} <code>{html.escape(agent_peer)}</code></h2>")
        body.append("<table><tr><th>log</th><th>started</th><th>settings</th><th>samples</th><th>unreachable</th><th>malformed lines</th><th>ended</th></tr>")
        for run in agent_runs:
            settings = (run.start or {}).get("settings") or {}
            described = ", ".join(f"{key} {value}" for key, value in sorted(settings.items()) if key in ("seconds", "interval"))
            body.append(f"<tr><td>{html.escape(run.label)}</td><td>{html.escape(str((run.start or {}).get('time', '?')))}</td>"
                        f"<td>{html.escape(described)}</td><td>{len(run.samples)}</td><td>{run.unreachable}</td><td>{run.malformed}</td>"
                        f"<td>{'yes' if run.end else 'no (interrupted?)'}</td></tr>")
        body.append("</table>")

        links = {}
        for run in agent_runs:
            for sample in run.samples:
                key = (sample["peer"], sample["transport"])
                links.setdefault(key, Link(agent, *key)).add(run, sample)
        body.append("<table><tr><th>peer</th><th>id</th><th>transport</th><th>samples</th><th>time active</th>"
                    "<th>RTT p50 (ms)</th><th>RTT p95 (ms)</th><th>RTT max (ms)</th><th>goodput mean</th><th>goodput max</th>"
                    "<th>reconnects</th><th>failovers</th><th>RSSI median (range), dBm</th></tr>")
        for key in sorted(links):
            body.append(f"<tr>{links[key].summary_cells()}</tr>")
        body.append("</table>")
        for key in sorted(links):
            link = links[key]
            name = f"{link.peer_name or link.peer} over {link.transport}"
            body.append(f"<h3>{html.escape(agent)} → {html.escape(name)}</h3><div class=plots>")
            fields = [("rtt_ms", "RTT", "ms"), ("goodput_bps", "goodput (per transport)", "bytes/s")]
            if link.column("rssi_dbm"):
                fields.append(("rssi_dbm", "RSSI", "dBm"))
            for field, title, unit in fields:
                series = []
                for index, (run, samples) in enumerate(link.by_run.items()):
                    line = with_gaps(sorted(samples, key=lambda s: s["t"]), field, run.interval)
                    series.append((run.label, PALETTE[index % len(PALETTE)], line))
                body.append(svg_plot(f"{title}: {agent} → {name}", unit, series))
            body.append("</div>")
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>Arcus field test</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def main(argv):
    parser = argparse.ArgumentParser(description="Turn `arcus field-test` JSON lines logs into one HTML report with SVG plots.")
    parser.add_argument("logs", nargs="+", metavar="LOG", help="a log that `arcus field-test --out` wrote")
    parser.add_argument("--out", required=True, help="the HTML file to write")
    arguments = parser.parse_args(argv)
    try:
        runs = [Run(path) for path in arguments.logs]
        text = report(runs)
        try:
            with open(arguments.out, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as error:
            raise ReportError(f"--out {arguments.out}: cannot write it ({error.strerror or error})")
    except ReportError as error:
        print(f"field-report: {error}", file=sys.stderr)
        return 2
    print(f"field-report: wrote {arguments.out} ({sum(len(run.samples) for run in runs)} samples from {len(runs)} log(s))", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
