"""The tracer's cost from trace-cost.json (docs/trace.md): per trial, the slowest rank's comm_init + first_enqueue;
per cell, the median and the change against the untraced trials with a 95% bootstrap interval (ratio of medians)."""
import json, random, statistics as st, sys
from collections import defaultdict

d = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "trace-cost.json"))
vals, ctx = defaultdict(list), defaultdict(list)
for t in d["trials"]:
    if t["status"] != "ok":
        continue
    c = d["configs"][t["config_id"]]
    calls = next(e["value"] for e in c["env"] if e["key"] == "COLDSTART_TRACE_CALLS")
    key = (c["mode"], calls if c.get("trace") else "off")
    vals[key].append(max(sum(p["dur_ms"] for p in r["phases"] if p["name"] in ("comm_init", "first_enqueue"))
                         for r in t["ranks"]))
    ctx[key].append(max(sum(p["dur_ms"] for p in r["phases"] if p["name"] == "cuda_context") for r in t["ranks"]))

def interval(base, traced, n=4000):
    random.seed(1)
    r = sorted(st.median(random.choices(traced, k=len(traced))) / st.median(random.choices(base, k=len(base))) - 1
               for _ in range(n))
    return r[int(0.025 * n)], r[int(0.975 * n)]

for mode in ("shared", "isolated"):
    base = vals[(mode, "off")]
    print(f"{mode}: untraced n={len(base)} median {st.median(base):.0f} ms, cuda_context {st.median(ctx[(mode, 'off')]):.0f}")
    for k in ("all", "none", "no-kernel-loading"):
        v = vals[(mode, k)]
        lo, hi = interval(base, v)
        print(f"  {k:<18} n={len(v)} median {st.median(v):.0f}  {100 * (st.median(v) / st.median(base) - 1):+.1f}% "
              f"[{100 * lo:+.1f}%, {100 * hi:+.1f}%]  cuda_context {st.median(ctx[(mode, k)]):.0f}")
