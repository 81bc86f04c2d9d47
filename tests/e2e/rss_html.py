#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The --rss views of report --html, rendered in Debian's headless Chromium
(chromium-driver, python3-selenium), against report --json of the same
trace (tests/e2e/rss_html.sh runs it).

usage: rss_html.py PAGE.html REPORT.json LABEL [ARTIFACTS_DIR]

Every figure the page shows for --rss (the samples, the reconciliation at
the last snapshot and at the peak, its parts stacked over time, the sites
of the program's mmaps, the pages first written by site, and the flame
graph's first-written and resident bytes) is read from the rendered tables (each cell
keeps its exact figure in data-value or data-bytes beside the rounded text)
and must equal report --json's exactly. Prints TAP lines.
"""
import json
import os
import re
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

FAILS = 0
LABEL = ""


def check(name, got, want):
    global FAILS
    if got == want:
        print("ok - %s: %s" % (LABEL, name))
    else:
        FAILS += 1
        print("not ok - %s: %s: got %r, want %r" % (LABEL, name, got, want))


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--disable-background-networking", "--window-size=1600,1400"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def shown(text):
    """The bytes a cell's rounded text says ("7.76 MiB"), or None."""
    m = re.fullmatch(r"([0-9.]+) (B|KiB|MiB|GiB|TiB)", text.strip())
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def cell_value(td):
    v = td.get_attribute("data-value")
    return None if v is None else int(v)


def rounded_ok(td):
    """The text shown rounds the exact figure (to the 3 significant digits
    bytes() keeps), or says '-' where there is none."""
    v, s = cell_value(td), shown(td.text)
    if v is None:
        return td.text == "-"
    return s is not None and abs(s - v) <= max(0.006 * v, 0.5)


def site_rows(d, box):
    return sorted((tr.get_attribute("data-name"), int(tr.get_attribute("data-line")), int(tr.get_attribute("data-bytes")),
                   None if tr.get_attribute("data-count") is None else int(tr.get_attribute("data-count")))
                  for tr in d.find_elements(By.CSS_SELECTOR, "#%s tbody tr" % box))


def want_sites(lst, key, count):
    return sorted((s["name"], s["line"] or 0, s[key], s[count] if count else None) for s in lst or [])


RC_KEYS = ["heap_live_resident_bytes", "allocator_free_resident_bytes", "allocator_resident_bytes",
           "outside_resident_bytes", "thread_stacks_bytes", "file_private_bytes", "other_bytes",
           "resident_anon_bytes", "rss_anon_bytes", "rss_file_bytes", "rss_shmem_bytes", "heap_live_bytes",
           "heap_live_not_resident_bytes"]


def test_reconcile(d, R):
    last, peak = R["reconciled_last"], R["reconciled_peak"]
    known = last["heap_live_resident_bytes"] is not None
    cols = ["last"] + (["peak"] if peak and peak["time_ns"] != last["time_ns"] else [])
    rows = d.find_elements(By.CSS_SELECTOR, "#rss-reconcile tbody tr")
    got = {}
    rounding = []
    for tr in rows:
        for td in tr.find_elements(By.CSS_SELECTOR, "td[data-col]"):
            got[(tr.get_attribute("data-key"), td.get_attribute("data-col"))] = cell_value(td)
            rounding.append(rounded_ok(td))
    want = {}
    for k in RC_KEYS:
        if k in ("heap_live_resident_bytes", "allocator_free_resident_bytes", "heap_live_bytes",
                 "heap_live_not_resident_bytes") and not known:
            continue
        if k == "allocator_resident_bytes" and known:
            continue
        if k in ("rss_file_bytes", "rss_shmem_bytes") and not (last["rss_file_bytes"] or last["rss_shmem_bytes"]):
            continue
        for c in cols:
            want[(k, c)] = (last if c == "last" else peak)[k]
    check("the reconciliation table (%d rows x %s) is report --json's reconciled_%s" %
          (len(rows), "/".join(cols), " and reconciled_".join(cols)), got, want)
    check("... each cell's text rounds its exact figure", all(rounding) and len(rounding) == len(want), True)
    parts = sum(got[(k, "last")] for k in RC_KEYS[:7] if (k, "last") in got)
    check("... its parts add up to its resident anonymous pages", parts, got.get(("resident_anon_bytes", "last")))
    check("the program's mmaps resident at the last snapshot, by site, are reconciled_last.outside_sites",
          site_rows(d, "rss-outside"), want_sites(last["outside_sites"], "resident_bytes", None))
    adv = d.find_elements(By.CSS_SELECTOR, "#rss-reconcile .warn")
    check("the advice line is reconciled_last.advice", adv[0].text if adv else None,
          "Advice: " + last["advice"] if last["advice"] else None)
    return got


def test_samples(d, R):
    got = {}
    for tr in d.find_elements(By.CSS_SELECTOR, "#rss-samples tbody tr"):
        for td in tr.find_elements(By.CSS_SELECTOR, "td[data-key]"):
            got[(tr.get_attribute("data-key"), td.get_attribute("data-key"))] = cell_value(td)
    want = {}
    for w in ("first", "peak", "last"):
        for k in ("resident_bytes", "anon_bytes", "file_bytes", "shmem_bytes", "heap_bytes"):
            want[(w, k)] = R[w][k] if k != "heap_bytes" or R["heap_known"] else None
    check("the samples table (first, peak, last) is report --json's rss.first, .peak, .last", got, want)
    got = {(p.get_attribute("data-when"), s.get_attribute("data-key")): int(s.get_attribute("data-value"))
           for p in d.find_elements(By.CSS_SELECTOR, "#rss-rollup p") for s in p.find_elements(By.CSS_SELECTOR, "span")}
    want = {(w, k): R["rollup_" + w]["lines"][k] for w in ("start", "end") if R["rollup_" + w]
            for k in ("Rss", "Pss", "Anonymous", "Private_Dirty", "Swap") if k in R["rollup_" + w]["lines"]}
    check("smaps_rollup's lines at the start (and the end, where read) are rss.rollup_start's (and _end's), %d of them" % len(want),
          got, want)


SERIES_COL = {"heap_live_resident_bytes": 2, "allocator_free_resident_bytes": 3, "allocator_resident_bytes": 4,
              "outside_resident_bytes": 5, "thread_stacks_bytes": 6, "file_private_bytes": 7, "other_bytes": 8}


def legend(d):
    lg = d.find_element(By.ID, "rss-legend")
    return int(lg.get_attribute("data-index")), {e.get_attribute("data-key"): int(e.get_attribute("data-value"))
                                                 for e in lg.find_elements(By.CSS_SELECTOR, "[data-key]")}


def test_chart(d, R):
    """The parts stacked over time: each drawn layer's values are
    reconciled_series' column, the legend at the last snapshot is the
    table's last column, the series holds the peak's column, and hovering at
    the chart's left edge shows the first snapshot."""
    S, last, peak = R["reconciled_series"], R["reconciled_last"], R["reconciled_peak"]
    known = last["heap_live_resident_bytes"] is not None
    layers = {p.get_attribute("data-key"): [int(v) for v in p.get_attribute("data-values").split(",")]
              for p in d.find_elements(By.CSS_SELECTOR, "#rss-chart-svg path.rc-part")}
    want = {k: [s[c] for s in S] for k, c in SERIES_COL.items()
            if (k != "allocator_resident_bytes" or not known) and (k not in ("heap_live_resident_bytes", "allocator_free_resident_bytes") or known)}
    check("the stacked chart draws %d parts over %d snapshots, each layer reconciled_series' column" % (len(want), len(S)),
          layers, want)
    i, lg = legend(d)
    check("the chart's legend shows the last snapshot, the table's last column",
          (i, lg), (len(S) - 1, {k: last[k] for k in list(want) + ["resident_anon_bytes"]}))
    at_peak = [s for s in S if s[0] == peak["time_ns"]]
    check("the series holds the peak's snapshot, the table's peak column",
          [{k: s[SERIES_COL[k]] for k in want} for s in at_peak], [{k: peak[k] for k in want}])
    svg = d.find_element(By.ID, "rss-chart-svg")
    ActionChains(d).move_to_element_with_offset(svg, int(-svg.size["width"] / 2 + 90), 0).perform()
    i, lg = legend(d)
    check("hovering at the chart's left edge shows the first snapshot's parts",
          (i, lg), (0, {**{k: S[0][SERIES_COL[k]] for k in want}, "resident_anon_bytes": S[0][1]}))
    return layers


def flame_nodes(d):
    return [(n.text, int(n.get_attribute("data-v"))) for n in d.find_elements(By.CSS_SELECTOR, "#flamegraph .fg-node")]


def test_flame(d, rep):
    """The flame graph's first-written bytes (and resident bytes): the root
    is report --json's total, and main's frame holds the bytes of the sites
    in main (all of rss_merged's writes are main's, through memset or not)."""
    R = rep["rss"]
    F = R["maps"]["faults"]
    check("the flame graph offers first-written bytes where write faults were sampled (%d)" % F["samples"],
          d.find_element(By.ID, "fg-written").is_displayed(), F["samples"] > 0)
    if not F["samples"]:
        return
    d.find_element(By.CSS_SELECTOR, "input[name=fg-metric][value='6']").click()
    nodes = flame_nodes(d)
    check("first-written bytes: the flame graph's root and main's frame are rss.maps.faults' bytes, all and main's sites",
          (nodes[:1], sorted(v for n, v in nodes if n == "main")),
          ([("all", F["bytes"])], [sum(s["bytes"] for s in F["sites"] if s["function"] == "main")]))
    resident = R["reconciled_last"]["heap_live_resident_bytes"]
    if resident is not None:
        d.find_element(By.CSS_SELECTOR, "input[name=fg-metric][value='5']").click()
        nodes = flame_nodes(d)
        check("resident bytes: the flame graph's root is reconciled_last.heap_live_resident_bytes, the sites' resident_bytes",
              (nodes[:1], sum(s["resident_bytes"] for s in rep["sites"])), ([("all", resident)], resident))
    else:
        check("resident bytes: not offered where the live heap is not known", d.find_element(By.ID, "fg-resident").is_displayed(), False)
    d.find_element(By.CSS_SELECTOR, "input[name=fg-metric][value='0']").click()


def test_maps(d, R):
    M = R["maps"]
    note = d.find_element(By.ID, "rss-maps-note")
    check("mapped by the program outside the allocator, and the allocator's, are rss.maps'",
          (int(note.get_attribute("data-outside")), int(note.get_attribute("data-allocator"))),
          (M["outside_bytes"], M["allocator_bytes"]))
    check("the program's own mappings by site are rss.maps.sites",
          site_rows(d, "rss-maps"), want_sites(M["sites"], "bytes", "mappings"))
    F = M["faults"]
    fn = d.find_element(By.ID, "rss-faults-note")
    check("pages first written, in all, are rss.maps.faults.bytes", int(fn.get_attribute("data-bytes") or 0), F["bytes"])
    check("pages first written by site are rss.maps.faults.sites",
          site_rows(d, "rss-faults"), want_sites(F["sites"], "bytes", "samples"))
    G, text = M["glibc"], d.find_element(By.ID, "rss-glibc").text
    if G:
        want = ["%d arenas made, %d taken by another thread" % (G["arenas_new"], G["arenas_reused"]),
                "the main heap grown %d times by brk" % G["sbrk_more"], "trimmed %d times" % G["sbrk_less"],
                "other arenas\u2019 heaps: %d mapped" % G["heaps_new"], "grown %d times" % G["heaps_grown"],
                "shrunk %d times" % G["heaps_shrunk"], "%d unmapped" % G["heaps_freed"],
                "retried in another arena: %d" % G["retries"]]
        want += ["mallopt(%s, %d)" % (m["name"] or m["param"], m["value"]) for m in G["mallopt"]]
        want += ["%s (%s:%d) %d" % (s["name"], s["file"].split("/")[-1], s["line"], s["arenas"]) for s in G["arena_sites"]]
        check("glibc's probes: the paragraph says rss.maps.glibc's counts, mallopt calls and arena sites",
              [w for w in want if w not in text], [])
    else:
        check("glibc's probes: the paragraph says the C library has none", "not in the target" in text, True)


def main():
    global LABEL
    page, rep, LABEL = sys.argv[1:4]
    out = sys.argv[4] if len(sys.argv) > 4 else None
    report = json.load(open(rep))
    R = report["rss"]
    d = browser()
    try:
        d.get("file://" + page)
        check("the script ran", d.find_element(By.TAG_NAME, "html").get_attribute("data-status"), "ok")
        check("the --rss section is shown", d.find_element(By.ID, "rss-sec").is_displayed(), True)
        test_samples(d, R)
        got = test_reconcile(d, R)
        test_maps(d, R)
        layers = test_chart(d, R)
        test_flame(d, report)
        print("# rss_html.py: every check ran")
        print("# rss_html.py: reconcile " + json.dumps({"%s/%s" % k: v for k, v in got.items()}))
        print("# rss_html.py: layers " + json.dumps(layers))
        if out:
            os.makedirs(out, exist_ok=True)
            d.find_element(By.ID, "rss-sec").screenshot(os.path.join(out, "rss-%s.png" % LABEL))
    finally:
        d.quit()
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
