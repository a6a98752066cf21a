"""The growth charts of a coldstart HTML report as one PNG, for a results folder's README (GitHub shows no report):
python3 growth_plot.py REPORT.html OUT.png [CONFIG_SUBSTRING ...]

Takes the report's style and its "Growth with the ranks" section (each configuration's log–log chart; the tables are
left to the report and growth.md), keeps the configurations whose heading holds one of the substrings (all when none
is given), and has headless Chromium draw them. `coldstart report --html REPORT.html RUNS...` makes the report.
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> None:
    report, out, wanted = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    page = report.read_text()
    style = re.search(r"<style>.*?</style>", page, re.S)
    start = page.find("<h3>Growth with the ranks")
    if not style or start < 0:
        sys.exit(f"{report}: no growth section (a report of runs at 3 or more rank counts has one)")
    section = page[start:]
    parts = re.split(r"(?=<h3>)", section)
    kept = [p for p in parts[1:] if not wanted or any(w in p[: p.find("</h3>")] for w in wanted)]
    # the section ends where the next heading of a higher level begins
    kept = [re.sub(r"<table.*?</table>", "", re.split(r"<h2", p)[0], flags=re.S) for p in kept]
    body = parts[0] + "".join(kept)
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "growth.html"
        html.write_text(f"<html><head><meta charset='utf-8'>{style.group(0)}</head><body>{body}</body></html>")
        height = 60 + 420 * len(kept)
        subprocess.run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--screenshot={out.resolve()}",
                f"--window-size=1000,{height}",
                html.as_uri(),
            ],
            check=True,
            capture_output=True,
        )
    print(f"{out}: {len(kept)} configuration(s)")


if __name__ == "__main__":
    main()
