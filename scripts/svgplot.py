"""Minimal SVG charts (grouped bars, lines) for the experiment reports; no dependencies."""

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def _esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _nice_max(v):
    if v <= 0:
        return 1.0
    import math
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if m * e >= v:
            return m * e
    return 10 * e


def _frame(w, h, title, ylabel, ymax, left=60, bottom=70, top=40, right=20):
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="DejaVu Sans, sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w/2}" y="20" text-anchor="middle" font-size="14">{_esc(title)}</text>',
           f'<text transform="translate(15,{(top+h-bottom)/2}) rotate(-90)" text-anchor="middle">{_esc(ylabel)}</text>']
    ph = h - top - bottom
    for i in range(6):
        y = top + ph - ph * i / 5
        out.append(f'<line x1="{left}" y1="{y}" x2="{w-right}" y2="{y}" stroke="#ddd"/>')
        out.append(f'<text x="{left-5}" y="{y+4}" text-anchor="end">{ymax*i/5:g}</text>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top+ph}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top+ph}" x2="{w-right}" y2="{top+ph}" stroke="black"/>')
    return out, left, top, w - left - right, ph


def bars(path, title, ylabel, groups, series, values, errors=None, w=820, h=420):
    """groups: x labels; series: legend names; values[s][g] (None = missing)."""
    ymax = _nice_max(max(v for row in values for v in row if v is not None) * 1.1)
    out, left, top, pw, ph = _frame(w, h, title, ylabel, ymax, bottom=90)
    gw = pw / len(groups)
    bw = gw * 0.8 / len(series)
    for gi, g in enumerate(groups):
        out.append(f'<text x="{left+gw*(gi+0.5)}" y="{top+ph+18}" text-anchor="middle">{_esc(g)}</text>')
        for si in range(len(series)):
            v = values[si][gi]
            if v is None:
                continue
            x = left + gw * gi + gw * 0.1 + bw * si
            bh = ph * v / ymax
            out.append(f'<rect x="{x:.1f}" y="{top+ph-bh:.1f}" width="{bw*0.95:.1f}" height="{bh:.1f}" fill="{COLORS[si%8]}"/>')
            if errors and errors[si][gi]:
                lo, hi = errors[si][gi]
                cx = x + bw * 0.475
                out.append(f'<line x1="{cx:.1f}" y1="{top+ph-ph*lo/ymax:.1f}" x2="{cx:.1f}" y2="{top+ph-ph*hi/ymax:.1f}" stroke="black"/>')
    for si, s in enumerate(series):
        x = left + (si % 4) * pw / 4
        y = h - 45 + (si // 4) * 16
        out.append(f'<rect x="{x}" y="{y-10}" width="12" height="12" fill="{COLORS[si%8]}"/>')
        out.append(f'<text x="{x+16}" y="{y}">{_esc(s)}</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


def lines(path, title, xlabel, ylabel, named_series, w=820, h=420, shade=None):
    """named_series: [(name, [(x, y), ...])]; shade: (x0, x1) interval to grey out."""
    xmax = max(x for _, pts in named_series for x, _ in pts)
    ymax = _nice_max(max(y for _, pts in named_series for _, y in pts) * 1.1)
    out, left, top, pw, ph = _frame(w, h, title, ylabel, ymax, bottom=90)
    X = lambda x: left + pw * x / xmax
    Y = lambda y: top + ph - ph * y / ymax
    if shade:
        out.insert(4, f'<rect x="{X(shade[0]):.1f}" y="{top}" width="{X(shade[1])-X(shade[0]):.1f}" height="{ph}" fill="#f3f3f3"/>')
    for i in range(6):
        x = xmax * i / 5
        out.append(f'<text x="{X(x):.1f}" y="{top+ph+16}" text-anchor="middle">{x:g}</text>')
    out.append(f'<text x="{left+pw/2}" y="{top+ph+34}" text-anchor="middle">{_esc(xlabel)}</text>')
    for si, (name, pts) in enumerate(named_series):
        d = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{d}" fill="none" stroke="{COLORS[si%8]}" stroke-width="1.5"/>')
        x = left + (si % 4) * pw / 4
        y = h - 30 + (si // 4) * 16
        out.append(f'<rect x="{x}" y="{y-10}" width="12" height="12" fill="{COLORS[si%8]}"/>')
        out.append(f'<text x="{x+16}" y="{y}">{_esc(name)}</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")
