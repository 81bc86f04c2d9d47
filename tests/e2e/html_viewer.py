#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The HTML viewer driven in Debian's headless Chromium through
chromium-driver, as a user drives it (tests/e2e/html_viewer.sh runs it).

usage: html_viewer.py REPORT.html REPORT.json MARKS.html MARKS.json DIFF.html ARTIFACTS_DIR

REPORT is tests/progs/threads (4 workers, known sites and sizes, see
threads.c), REPORT.json its report --json; MARKS the same of tests/progs/marks
(zones on three named threads); DIFF is memtrace diff --html of
diff_growth 1 against diff_growth 5. Prints TAP lines (ok / not ok) and saves
screenshots at 800 and 1920 px into ARTIFACTS_DIR.
"""
import json
import os
import re
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

FAILS = 0


def ok(name):
    print("ok - " + name)


def check(name, got, want):
    global FAILS
    if got == want:
        ok(name)
    else:
        FAILS += 1
        print("not ok - %s: got %r, want %r" % (name, got, want))


def page_data(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="memtrace-data">\n(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--disable-background-networking", "--window-size=1920,1400"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def totals(d):
    """The selection's totals as the cards show them (exact, data-value)."""
    keys = {0: "allocations", 1: "allocated_bytes", 3: "leaked_bytes", 4: "peak_bytes",
            5: "temporary_allocations"}
    return {k: int(d.find_element(By.ID, "tot-%d" % i).get_attribute("data-value")) for i, k in keys.items()}


def site_rows(d):
    return [td.text.split("\n")[0] for td in d.find_elements(By.CSS_SELECTOR, "#sites tbody td.fn:first-child")]


def matches(d):
    return sorted({e.text for e in d.find_elements(By.CSS_SELECTOR, "#flamegraph .fg-match")})


def histogram(d):
    return {int(b.get_attribute("data-class")): int(b.get_attribute("data-count"))
            for b in d.find_elements(By.CSS_SELECTOR, "#hist-svg .hist-bar")
            if b.get_attribute("data-count") != "0"}


def shot(d, width, path):
    """A screenshot WIDTH px wide, once the page has redrawn its charts for
    that width (it does 100 ms after the last resize)."""
    d.set_window_size(width, 1400)
    for _ in range(50):
        widest = d.execute_script("return Math.max.apply(null, Array.from("
                                  "document.querySelectorAll('.chart svg'), function (e) { return +e.getAttribute('width'); }).concat([0]));")
        if widest <= width:
            break
        time.sleep(0.05)
    d.save_screenshot(path)


SMALLEST_TEXT = """
var min = 1e9, where = '';
document.querySelectorAll('body *').forEach(function (e) {
  var own = Array.from(e.childNodes).some(function (n) { return n.nodeType === 3 && n.textContent.trim(); });
  if (!own || !e.getClientRects().length) return;
  var px = parseFloat(getComputedStyle(e).fontSize), svg = e.closest('svg');
  if (svg) px *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width; /* drawn scaled? */
  if (px < min) { min = px; where = e.tagName + ' ' + e.textContent.slice(0, 30); }
});
return [Math.round(min * 100) / 100, where];
"""


def smallest_text(d):
    return d.execute_script(SMALLEST_TEXT)


def search(d, text):
    box = d.find_element(By.ID, "search")
    # as typed: select what is there, type over it (clear() fires no input event)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.BACKSPACE)
    if text:
        box.send_keys(text)


def drag(d, x0, x1):
    """Drag on the memory chart from fraction X0 to X1 of its width."""
    svg = d.find_element(By.ID, "chart-svg")
    w, h = svg.size["width"], svg.size["height"]
    a = ActionChains(d)
    a.move_to_element_with_offset(svg, int(w * x0 - w / 2), 0).click_and_hold()
    a.move_to_element_with_offset(svg, int(w * x1 - w / 2), 0).release().perform()


def cell_sums(data, thread, b0, b1):
    """The figures of THREAD's cells in buckets [B0, B1): what the page must
    show, summed here from the data the C side wrote."""
    c, s = data["view"]["cells"], [0] * 6
    for i in range(0, len(c), 11):
        if c[i + 1] == thread and b0 <= c[i + 3] < b1:
            for k in range(6):
                s[k] += c[i + 5 + k]
    return {"allocations": s[0], "allocated_bytes": s[1], "leaked_bytes": s[3], "peak_bytes": s[4],
            "temporary_allocations": s[5]}


def worker(i):
    """threads.c's worker i: 1000 x 32(i+1) B, 50 x 16 B temporary, 10 x
    100 B leaked."""
    return {"allocations": 1060, "allocated_bytes": 32000 * (i + 1) + 800 + 1000, "leaked_bytes": 1000,
            "temporary_allocations": 50}


def size_class(n):
    return n.bit_length() - 1 if n > 1 else 0


def test_report(d, page, rep, out):
    data = page_data(page)
    T = rep["totals"]
    d.get("file://" + page)
    check("report: the script ran", d.find_element(By.TAG_NAME, "html").get_attribute("data-status"), "ok")
    check("report: the whole trace's totals are report --json's", totals(d),
          {k: T[k] for k in ("allocations", "allocated_bytes", "leaked_bytes", "peak_bytes",
                             "temporary_allocations")})
    check("report: histogram of the whole trace (threads.c's sizes; 4 DTV callocs of 272 B)", histogram(d),
          {4: 200, 5: 1000, 6: 2040, 7: 1000, 8: 4})
    shot(d, 800, os.path.join(out, "report-800.png"))
    px, where = smallest_text(d)
    check("at 800 px no text is under 12 px (smallest: %s px, %s)" % (px, where), px >= 12, True)
    shot(d, 1920, os.path.join(out, "report-1920.png"))

    search(d, "site_thread_temp")
    check("search 'site_thread_temp': the site table", site_rows(d), ["site_thread_temp"])
    check("search 'site_thread_temp': the highlighted frames", matches(d), ["site_thread_temp"])
    search(d, "/^site_thread_(work|leak)$/")
    check("search /regex/: the site table", sorted(site_rows(d)), ["site_thread_leak", "site_thread_work"])
    check("search /regex/: the highlighted frames", matches(d), ["site_thread_leak", "site_thread_work"])
    search(d, "threads.c")
    check("search by file: the frames of threads.c's functions", matches(d),
          ["main", "site_thread_leak", "site_thread_temp", "site_thread_work", "thread_main"])
    check("search by file: the sites whose stacks pass through threads.c",
          {"site_thread_leak", "site_thread_temp", "site_thread_work"} <= set(site_rows(d)), True)
    search(d, "/[/")
    check("search: a bad regex says so", d.find_element(By.ID, "search-note").text.startswith("not a regular expression"), True)
    search(d, "")
    check("search cleared: no highlight", matches(d), [])
    check("search cleared: no note", d.find_element(By.ID, "search-note").text, "")
    check("search cleared: every site", len(site_rows(d)), len(rep["sites"]))

    d.find_element(By.XPATH, "//th[starts-with(., 'Leaked')]").click()
    check("site table sorted by leaked bytes", site_rows(d)[0], "site_thread_leak")
    d.find_element(By.XPATH, "//th[starts-with(., 'Temporary')]").click()
    check("site table sorted by temporary allocations", site_rows(d)[0], "site_thread_temp")

    # each worker thread, selected by its name and tid, shows its own figures
    threads = Select(d.find_element(By.ID, "thread"))
    labels = [o.text for o in threads.options]
    check("thread selector: all, then each thread with its name and tid", labels,
          ["all threads"] + ["%s (%d)" % (t[1], t[0]) for t in data["view"]["threads"]])
    seen = []
    for idx in range(len(data["view"]["threads"])):
        threads.select_by_value(str(idx))
        got = totals(d)
        got.pop("peak_bytes")
        w = [i for i in range(4) if worker(i) == got]
        if w:
            seen.append(w[0])
            check("thread %s: worker %d's histogram" % (labels[idx + 1], w[0]), histogram(d),
                  {4: 50, size_class(32 * (w[0] + 1)): 1000 + (10 if size_class(32 * (w[0] + 1)) == 6 else 0),
                   **({} if size_class(32 * (w[0] + 1)) == 6 else {6: 10})})
    check("each of the 4 workers selected shows threads.c's figures for it", sorted(seen), [0, 1, 2, 3])

    # the last worker stays selected; the whole width of the chart is the whole trace
    idx = len(data["view"]["threads"]) - 1
    threads.select_by_value(str(idx))
    whole = totals(d)
    nb = data["view"]["nbuckets"]
    drag(d, 0.005, 0.995)
    check("drag over the whole chart: the whole range", d.find_element(By.TAG_NAME, "html").get_attribute("data-range"),
          "0 %d" % nb)
    check("drag over the whole chart: the thread's totals", totals(d), whole)
    # The chart runs on to the trace's last event (the frees at exit), past the
    # last allocation's bucket: in a run that ended slowly 55% of its width was
    # past every bucket. A drag that ends there selects them all, so the drag
    # ends at half as far until it ends inside the buckets.
    f = 0.55
    while True:
        drag(d, 0.005, f)
        b0, b1 = map(int, d.find_element(By.TAG_NAME, "html").get_attribute("data-range").split())
        if b1 < nb or f < 0.05:
            break
        f /= 2
    check("drag over the left %.0f%% of the chart: a range from the start" % (100 * f), (b0, b1 < nb), (0, True))
    check("the same drag: the totals of the thread's cells in buckets %d..%d" % (b0, b1),
          totals(d), cell_sums(data, idx, b0, b1))
    d.save_screenshot(os.path.join(out, "report-selection-1920.png"))
    d.find_element(By.ID, "range-clear").click()
    check("whole trace again", totals(d), whole)

    d.find_element(By.CSS_SELECTOR, "input[name=fg-view][value=bottom]").click()
    nodes = d.find_elements(By.CSS_SELECTOR, "#flamegraph .fg-node")
    row1 = sorted({n.text for n in nodes if n.value_of_css_property("top") == "20px"})
    check("bottom-up: the allocating functions on the first row", row1,
          ["site_thread_leak", "site_thread_temp", "site_thread_work"])
    row2 = sorted({n.text for n in nodes if n.value_of_css_property("top") == "40px"})
    check("bottom-up: their caller below them, merged", row2, ["thread_main"])
    shot(d, 800, os.path.join(out, "report-bottom-up-800.png"))
    d.set_window_size(1920, 1400)


def test_zones(d, page, rep):
    """tests/progs/marks: its zones against report --json's exclusive zone
    figures, and one worker's part of zone job (marks.c: 3 x 32(w+1) B in
    each of 4 frames)."""
    data = page_data(page)
    d.get("file://" + page)
    zones = Select(d.find_element(By.ID, "zone"))
    check("zone selector: all, outside any zone, then each zone",
          [o.text for o in zones.options], ["all zones", "outside any zone"] + data["view"]["zones"])
    check("zone selector: the zones that allocated, as report --json has them",
          sorted(data["view"]["zones"]), sorted(z["name"] for z in rep["zones"] if z["allocations"]))
    for z in [z for z in rep["zones"] if z["allocations"]]:
        zones.select_by_visible_text(z["name"])
        got = totals(d)
        check("zone %s: allocations and bytes are report --json's" % z["name"],
              (got["allocations"], got["allocated_bytes"], got["leaked_bytes"]),
              (z["allocations"], z["allocated_bytes"], z["leaked_bytes"]))
    zones.select_by_visible_text("job")
    check("zone job: histogram (worker-0's 32 B, worker-1's 64 B)", histogram(d), {5: 12, 6: 12})
    threads = Select(d.find_element(By.ID, "thread"))
    w1 = [o.text for o in threads.options if o.text.startswith("worker-1 (")]
    check("thread selector names worker-1", len(w1), 1)
    threads.select_by_visible_text(w1[0])
    got = totals(d)
    check("zone job and thread worker-1", (got["allocations"], got["allocated_bytes"]), (12, 768))
    check("zone job and thread worker-1: the site table", site_rows(d), ["site_job"])


def test_diff(d, page, out):
    d.get("file://" + page)
    check("diff: the script ran", d.find_element(By.TAG_NAME, "html").get_attribute("data-status"), "ok")
    grow = sorted({e.text for e in d.find_elements(By.CSS_SELECTOR, "#flamegraph .fg-grow")})
    shrink = sorted({e.text for e in d.find_elements(By.CSS_SELECTOR, "#flamegraph .fg-shrink")})
    check("diff: growing frames (site_grow x4, site_only_new appears)", "site_grow" in grow and "site_only_new" in grow, True)
    check("diff: shrinking frames (site_only_base goes)", "site_only_base" in shrink and "site_grow" not in shrink, True)
    check("diff: a legend of both colours", len(d.find_elements(By.CSS_SELECTOR, ".legend i")), 2)
    rows = {}
    for tr in d.find_elements(By.CSS_SELECTOR, "#sites tbody tr"):
        rows[tr.find_element(By.CSS_SELECTOR, "td.fn").text.split("\n")[0]] = tr.get_attribute("data-delta")
    check("diff: site deltas of allocated bytes", {k: rows.get(k) for k in ("site_grow", "site_only_base", "site_only_new", "site_steady")},
          {"site_grow": "4000", "site_only_base": "-32", "site_only_new": "48", "site_steady": "0"})
    shot(d, 800, os.path.join(out, "diff-800.png"))
    px, where = smallest_text(d)
    check("diff at 800 px: no text under 12 px (smallest: %s px, %s)" % (px, where), px >= 12, True)
    shot(d, 1920, os.path.join(out, "diff-1920.png"))


def main():
    page, rep, marks, marks_rep, diff, out = sys.argv[1:7]
    os.makedirs(out, exist_ok=True)
    d = browser()
    try:
        test_report(d, page, json.load(open(rep)), out)
        test_zones(d, marks, json.load(open(marks_rep)))
        if diff != "-":
            test_diff(d, diff, out)
        print("# html_viewer.py: every check ran")
    finally:
        d.quit()
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
