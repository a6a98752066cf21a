#!/usr/bin/env python3
"""The HTML report in a real browser: `coldstart report --html` on recorded results, opened in headless Chromium
(Debian's `chromium`) with every host name unresolvable. Fails on any console message (the report has no script,
so any message is a failed load or an error), on a screenshot that is blank or nearly so, and on a dark theme that
does not turn the page dark. A control page with a console error checks that errors are seen at all.

usage: chromium_check.py COLDSTART_BIN SOURCE_DIR"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    sys.exit("chromium_check: no chromium on PATH; install Debian's chromium (scripts/setup.sh does)")


def open_page(browser, html, png, dark=False):
    """Screenshot `html`; returns the console lines Chromium logged."""
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
            "--v=0", "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,2400", "--screenshot=" + png]
    if dark:
        args.append("--force-dark-mode")
    p = subprocess.run(args + ["file://" + html], capture_output=True, text=True, timeout=120)
    if not os.path.exists(png):
        sys.exit(f"chromium_check: chromium wrote no screenshot (exit {p.returncode}): {p.stderr[-2000:]}")
    return [l for l in p.stderr.splitlines() if ":CONSOLE" in l]


def pixels(png):
    """Decodes an 8-bit RGB/RGBA PNG with the standard library: (width, height, rows of (r, g, b) tuples)."""
    data = open(png, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), f"unexpected PNG format {depth}/{colour}"
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, prev, rows = zlib.decompress(idat), width * bpp, bytearray(width * bpp), []
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def content(png):
    """(share of pixels that differ from the background, distinct colours, the background colour)."""
    _, _, rows = pixels(png)
    counts = {}
    for row in rows[::2]:
        for px in row[::2]:
            counts[px] = counts.get(px, 0) + 1
    background, n = max(counts.items(), key=lambda kv: kv[1])
    total = sum(counts.values())
    return 1 - n / total, len(counts), background


def main():
    coldstart, source = sys.argv[1], sys.argv[2]
    browser = chromium()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        control = os.path.join(tmp, "control.html")
        open(control, "w").write('<html><body><script>console.error("coldstart-control")</script>x</body></html>')
        if not open_page(browser, control, os.path.join(tmp, "control.png")):
            failures.append("the control page's console error was not seen: console checks would prove nothing")

        results = os.path.join(source, "docs/results/2026-11-29-h200x4")
        nets = os.path.join(source, "tests/data/net/reports")
        pages = {"report": [f"{results}/gpus2.json", f"{results}/gpus4.json", f"{results}/channels2.json"],
                 # doctor net's page: the WSL proxy trap and a peer matrix with a dropped pair, recorded in the lab.
                 "net": [f"{nets}/wsl-proxy-trap.json", f"{nets}/peers-dropped-pair.json"]}
        for name, inputs in pages.items():
            html = os.path.join(tmp, f"{name}.html")
            subprocess.run([coldstart, "report", *inputs, "--html", html], check=True, capture_output=True)
            failures += check_page(browser, html, tmp, name)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


def check_page(browser, html, tmp, name):
    """A drawn page without console messages, light and dark."""
    failures = []
    size = os.path.getsize(html)
    for dark in (False, True):
        png = os.path.join(tmp, f"{name}-{'dark' if dark else 'light'}.png")
        console = open_page(browser, html, png, dark)
        if console:
            failures.append(f"console messages ({'dark' if dark else 'light'}): " + " | ".join(console[:5]))
        drawn, colours, bg = content(png)
        print(f"{name} {'dark' if dark else 'light'}: {drawn:.1%} of pixels drawn, {colours} colours, background {bg}, "
              f"html {size} bytes")
        if drawn < 0.03 or colours < 20:
            failures.append(f"the {'dark' if dark else 'light'} screenshot is nearly empty ({drawn:.1%} drawn, {colours} colours)")
        luminance = sum(bg) / 3
        if dark and luminance > 80:
            failures.append(f"dark theme: the background is light {bg}")
        if not dark and luminance < 170:
            failures.append(f"light theme: the background is dark {bg}")
    return [f"{name}: {f}" for f in failures]


if __name__ == "__main__":
    main()
