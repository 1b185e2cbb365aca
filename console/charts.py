"""A small server-rendered SVG of memory growth: bars of memories recorded per day, stacked by
type, under a line of the running total. Geometry only; the template draws it."""

TYPE_ORDER = ("semantic", "episodic", "procedural")
WIDTH, HEIGHT, PAD = 600, 160, 24


def growth_chart(growth: dict) -> dict:
    series = growth["series"]
    n = max(len(series), 1)
    slot = (WIDTH - 2 * PAD) / n
    bar_w = max(slot * 0.7, 1)
    plot_h = HEIGHT - 2 * PAD
    day_max = max([sum(p["by_type"].values()) for p in series] + [1])
    total_max = max([p["total"] for p in series] + [1])
    bars, points = [], []
    for i, point in enumerate(series):
        x = PAD + i * slot + (slot - bar_w) / 2
        y = HEIGHT - PAD
        for kind in TYPE_ORDER:
            count = point["by_type"].get(kind, 0)
            if not count:
                continue
            h = count / day_max * plot_h * 0.6
            y -= h
            bars.append({"x": round(x, 1), "y": round(y, 1), "w": round(bar_w, 1), "h": round(h, 1),
                         "kind": kind, "title": f"{point['day']:%b %d}: {count} {kind}"})
        px = PAD + i * slot + slot / 2
        py = HEIGHT - PAD - point["total"] / total_max * plot_h
        points.append(f"{px:.1f},{py:.1f}")
    mix_total = sum(growth["mix"].values()) or 1
    mix = [{"kind": k, "count": growth["mix"].get(k, 0), "pct": round(growth["mix"].get(k, 0) * 100 / mix_total)}
           for k in TYPE_ORDER]
    return {
        "width": WIDTH, "height": HEIGHT, "pad": PAD, "baseline": HEIGHT - PAD,
        "bars": bars, "line": " ".join(points), "total": growth["total"], "total_max": total_max,
        "first_day": series[0]["day"] if series else None, "last_day": series[-1]["day"] if series else None,
        "mix": mix, "groups": {g: growth.get("groups", {}).get(g, 0) for g in ("current", "waiting", "earlier")},
    }
