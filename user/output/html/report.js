function header() {
  var t = D.trace;
  document.title = 'memtrace: ' + (t.comm || 'trace') + ' (pid ' + t.pid + ')';
  $('subtitle').textContent = (t.command || t.comm || '') + '  ·  pid ' + t.pid +
    '  ·  ' + dur(t.duration_ns) + (t.target_exited ? '  ·  target exited' : '');
  var w = [], T = D.totals;
  if (t.stop_reason) w.push(t.stop_reason.charAt(0).toUpperCase() + t.stop_reason.slice(1) + '.'); // how it ended: the OOM killer, a signal, a credential change
  var L = D.last_minute; // an OOM kill or a crash: what grew in its last minute, first
  if (L) {
    var site = function (s) { return s.name + (s.file ? ' (' + s.file.split('/').pop() + ':' + s.line + ')' : ''); };
    w.push('In its last minute (' + dur(L.from_ns) + ' to ' + dur(L.to_ns) + ')' +
      (L.memory_limit_bytes ? ', against a limit of ' + bytes(L.memory_limit_bytes) + ' (' + (L.memory_limit_of === 'host' ? 'the host\'s memory' : 'memory cgroup ' + L.memory_limit_of) + ')' : '') +
      ', the live heap grew most at ' + (L.grown.length ? L.grown.map(function (s) { return site(s) + ' +' + bytes(s.grown_bytes); }).join(', ') : 'no site') +
      (L.estimated ? ' (estimates)' : '') + '.' +
      (L.first_written.length ? ' First written (--rss, sampled): ' + L.first_written.map(function (s) { return site(s) + ' ~' + bytes(s.bytes); }).join(', ') + '.' : ''));
  }
  if (T.dropped_events) w.push(num(T.dropped_events) + ' events were dropped by the kernel: the figures below are incomplete.');
  if (t.partial) w.push('The trace is partial (' + (t.problem || 'cut short') + '): figures run up to its last complete chunk.');
  if (t.sample_bytes) w.push('Sampled trace (one sample per ' + bytes(t.sample_bytes) + ' on average): figures are estimates.');
  if (t.no_heap) w.push('Recorded with --rss=only: no allocator probes, so no heap figures; the chart shows resident memory alone.');
  var b = t.budget;
  if (b) w.push('Recorded with --budget ' + b.budget_ppm / 1e4 + '%: the probes lived in ' + num(b.windows) + ' windows, allocations traced ' +
    (100 * b.live_ns / Math.max(t.duration_ns, 1)).toFixed(2) + '% of the time. Every figure is an estimate (each recorded allocation stands for ' +
    (b.min_weight_ppm / 1e6).toFixed(1) + ' to ' + (b.max_weight_ppm / 1e6).toFixed(1) + '). The live heap and its peak are not known; leaked means outlived its window\'s tail (' + dur(b.long_lived_age_ns) + ').' +
    (b.allocated_bytes_se !== undefined ? ' Allocated bytes ' + bytes(T.allocated_bytes) + ' \u00b1 ' + bytes(Math.round(1.96 * b.allocated_bytes_se)) + ' (95%).' : '') +
    (b.large_bytes ? ' Large blocks (the allocator\'s own mappings of ' + bytes(b.large_bytes) + ' or more) are exact, windows or not: ' +
      num(b.large_allocations) + ' of ' + bytes(b.large_allocated_bytes) + ', ' + num(b.large_frees) + ' freed.' : ''));
  w.forEach(function (s) { $('warnings').appendChild(el('p', 'warn', s)); });
  var mn = document.querySelector('#memory-sec .note');
  if (b && mn) mn.textContent = 'Not the live heap (--budget does not see it): the estimated bytes of the blocks the windows saw allocated and not yet freed, long-lived ones kept. Drag to select the allocations made in a time range.';
  if (D.rss && D.rss.last && mn) {
    var last = D.rss.last;
    mn.appendChild(document.createTextNode(' With --rss, resident memory beside it, sampled every ' + dur(D.rss.period_ns) +
      ': dashed blue all of it (anon + file + shmem), dotted green anonymous. At the last sample: resident ' +
      bytes(last.resident_bytes) + ', anonymous ' + bytes(last.anon_bytes) + (D.rss.heap_known ? ', live heap ' + bytes(last.heap_bytes) : '') + '.'));
  }
}

/* ---- the viewer: a selection (thread, zone, time range, search) and every
 * view recomputed from the C side's cells (report_html_view.c): the script
 * only sums them. A cell is 11 numbers: stack, thread, zone (-1: none),
 * time bucket, size class, then allocations, allocated bytes, leaked
 * allocations, leaked bytes, bytes at the peak, temporary allocations. ---- */
var V = D.view, STR = V.strings, CS = 11, NF = 8; /* the cells' 6 figures, resident and first-written bytes */
var OTHER = V.stacks.length; /* the stack the folded ones became */
var OTHER_NAME = 'other: ' + V.folded.stacks + ' folded stacks';
/* metric: its label, its index among a cell's figures, its format */
var METRICS = [
  { h: 'allocated bytes', f: 1, fmt: bytes }, { h: 'allocations', f: 0, fmt: num },
  { h: 'leaked bytes', f: 3, fmt: bytes }, { h: 'bytes live at the peak', f: 4, fmt: bytes },
  { h: 'temporary allocations', f: 5, fmt: num }, { h: 'resident bytes', f: 6, fmt: bytes },
  { h: 'first-written bytes', f: 7, fmt: bytes }];
var sel = { thread: -1, zone: -2, b0: 0, b1: V.nbuckets, search: '', metric: 0, bottomUp: false, zoom: [] };
var cur = null; /* the sums for the selection */

function frameName(f) { return f < 0 ? OTHER_NAME : STR[V.frames[f][0]]; }
function stackFrames(s) { return s === OTHER ? [-1] : V.stacks[s][1]; }

/* sums per stack, in total and per size class for the selection */
function compute() {
  var c = V.cells, st = new Float64Array((OTHER + 1) * NF), tot = [0, 0, 0, 0, 0, 0, 0, 0], hist = {};
  for (var i = 0; i < c.length; i += CS) {
    if (sel.thread >= 0 && c[i + 1] !== sel.thread) continue;
    if (sel.zone !== -2 && c[i + 2] !== sel.zone) continue;
    if (c[i + 3] < sel.b0 || c[i + 3] >= sel.b1) continue;
    var o = c[i] * NF, h = hist[c[i + 4]] || (hist[c[i + 4]] = [0, 0]);
    for (var k = 0; k < 6; k++) { st[o + k] += c[i + 5 + k]; tot[k] += c[i + 5 + k]; }
    h[0] += c[i + 5]; h[1] += c[i + 6];
  }
  /* --rss: live blocks on resident pages at the last snapshot, per stack:
   * the whole trace's, whatever the selection */
  (V.resident || []).forEach(function (r) { st[r[0] * NF + 6] += r[1]; tot[6] += r[1]; });
  /* --rss: the pages each stack's code first wrote (sampled write faults), whole trace */
  (V.first_written || []).forEach(function (r) { st[r[0] * NF + 7] += r[1]; tot[7] += r[1]; });
  return { st: st, tot: tot, hist: hist };
}

/* the search as a test of a frame: substring (any case) or /regex/flags */
function matcher(q) {
  var re, m = /^\/(.+)\/([a-z]*)$/.exec(q);
  if (!q) return null;
  if (m) {
    try { re = new RegExp(m[1], m[2]); } catch (e) { return { error: e.message }; }
  } else {
    var l = q.toLowerCase();
    re = { test: function (s) { return s.toLowerCase().indexOf(l) >= 0; } };
  }
  var memo = new Map();
  return function (f) {
    if (memo.has(f)) return memo.get(f);
    var F = f < 0 ? null : V.frames[f];
    var r = F ? re.test(STR[F[0]]) || re.test(STR[F[1]]) || re.test(STR[F[3]]) : re.test(OTHER_NAME);
    memo.set(f, r);
    return r;
  };
}

/* ---- selection controls ---- */
function controls() {
  var t = $('thread'), z = $('zone');
  t.appendChild(new Option('all threads', '-1'));
  V.threads.forEach(function (th, i) { t.appendChild(new Option((th[1] || 'unnamed') + ' (' + th[0] + ')', String(i))); });
  z.appendChild(new Option('all zones', '-2'));
  z.appendChild(new Option('outside any zone', '-1'));
  V.zones.forEach(function (name, i) { z.appendChild(new Option(name, String(i))); });
  t.addEventListener('change', function () { sel.thread = +t.value; update(); });
  z.addEventListener('change', function () { sel.zone = +z.value; update(); });
  $('search').addEventListener('input', function () { sel.search = $('search').value; update(); });
  $('range-clear').addEventListener('click', function () { setRange(0, V.nbuckets); });
  if (V.resident) $('fg-resident').hidden = false;
  if (V.first_written) $('fg-written').hidden = false;
  document.querySelectorAll('input[name=fg-metric]').forEach(function (r) {
    r.addEventListener('change', function () { sel.metric = +r.value; flame(); });
  });
  document.querySelectorAll('input[name=fg-view]').forEach(function (r) {
    r.addEventListener('change', function () { sel.bottomUp = r.value === 'bottom'; sel.zoom = []; update(); });
  });
  $('fg-reset').addEventListener('click', function () { sel.zoom = []; flame(); });
  if (V.folded.stacks)
    $('folded-note').textContent = num(V.folded.stacks) + ' stacks that allocate little are folded into one "other" frame (' +
      bytes(V.folded.allocated_bytes) + ' in ' + num(V.folded.allocations) + ' allocations); every total still counts them.';
}

function setRange(b0, b1) {
  sel.b0 = Math.max(0, Math.min(b0, V.nbuckets - 1));
  sel.b1 = Math.max(sel.b0 + 1, Math.min(b1, V.nbuckets));
  if (!V.nbuckets) { sel.b0 = 0; sel.b1 = 0; }
  update();
}

function rangeText() {
  var whole = sel.b0 === 0 && sel.b1 >= V.nbuckets;
  html.setAttribute('data-range', sel.b0 + ' ' + sel.b1);
  $('range').textContent = whole ? 'Time: the whole trace (drag on the chart to choose a range)' :
    'Time: allocations made from ' + dur(sel.b0 * V.bucket_ns) + ' to ' + dur(sel.b1 * V.bucket_ns) +
    ' (the chart\u2019s ' + dur(V.bucket_ns) + ' buckets)';
  $('range-clear').hidden = whole;
}

function update() {
  cur = compute();
  var m = matcher(sel.search);
  $('search-note').textContent = m && m.error ? 'not a regular expression: ' + m.error : '';
  sel.match = m && !m.error ? m : null;
  rangeText();
  cards();
  flame();
  sites();
  histogram();
  chartSelection();
}

/* ---- totals of the selection ---- */
function cards() {
  var T = D.totals, box = $('cards');
  box.textContent = '';
  var c = [
    ['Allocations', 0, num(cur.tot[0]), 'allocation calls'],
    ['Allocated', 1, bytes(cur.tot[1]), num(cur.tot[1]) + ' B'],
    ['At the peak', 4, bytes(cur.tot[4]), 'live at ' + dur(T.peak_time_ns) + ' (all: ' + bytes(T.peak_bytes) + ')'],
    ['Leaked', 3, bytes(cur.tot[3]), num(cur.tot[2]) + ' allocations'],
    ['Temporary', 5, num(cur.tot[5]), pct(cur.tot[5], cur.tot[0]) + ' of allocations'],
    ['Unmatched frees', -1, num(T.unmatched_frees), 'whole trace: allocated before it'],
    ['Dropped events', -1, num(T.dropped_events), T.dropped_events ? 'figures incomplete' : 'none lost'],
    ['Sites', -1, num(D.nsites), dur(D.trace.duration_ns) + ' traced']];
  c.forEach(function (x) {
    var d = el('div', 'card');
    if (x[1] >= 0) { d.id = 'tot-' + x[1]; d.setAttribute('data-value', String(cur.tot[x[1]])); }
    d.appendChild(el('div', 'k', x[0]));
    d.appendChild(el('div', 'v', x[2]));
    d.appendChild(el('div', 'd', x[3]));
    box.appendChild(d);
  });
}

/* ---- flame graph: frames merged by name; top-down puts callers on top,
 * bottom-up puts the allocating functions on top with their callers below ---- */
var ROW = 20;
function flameTree() {
  var root = { name: 'all', v: new Float64Array(NF), kids: new Map(), parent: null, match: false };
  for (var s = 0; s <= OTHER; s++) {
    var o = s * NF;
    if (!cur.st[o] && !cur.st[o + 3] && !cur.st[o + 4] && !cur.st[o + 6] && !cur.st[o + 7]) continue;
    var fr = stackFrames(s), node = root, k, i, n = fr.length;
    for (k = 0; k < NF; k++) root.v[k] += cur.st[o + k];
    for (i = 0; i < n; i++) {
      var f = fr[sel.bottomUp ? n - 1 - i : i], name = frameName(f), next = node.kids.get(name);
      if (!next) {
        next = { name: name, v: new Float64Array(NF), kids: new Map(), parent: node, match: false, frame: f };
        node.kids.set(name, next);
      }
      if (sel.match && sel.match(f)) next.match = true;
      for (k = 0; k < NF; k++) next.v[k] += cur.st[o + k];
      node = next;
    }
  }
  return root;
}
function flameColor(name) {
  var h = 0;
  for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  /* warm oranges and yellows; matches are blue: apart for every colour vision */
  return 'hsl(' + (28 + h % 26) + ',' + (70 + h % 20) + '%,' + (66 + (h >> 8) % 14) + '%)';
}
function flameNode(box, node, x, w, depth, dim) {
  var d = el('div', 'fg-node' + (dim ? ' fg-dim' : '') + (node.match ? ' fg-match' : ''), node.name);
  d.style.left = (100 * x) + '%';
  d.style.width = (100 * w) + '%';
  d.style.top = (depth * ROW) + 'px';
  if (!node.match) d.style.background = flameColor(node.name);
  d.setAttribute('data-v', String(node.v[METRICS[sel.metric].f]));
  d.fgNode = node;
  box.appendChild(d);
}
function flame() {
  var box = $('flamegraph'), M = METRICS[sel.metric], f = M.f, root = flameTree(), z = root, chain = [], a, depth;
  fgState.root = root;
  box.textContent = '';
  for (var i = 0; i < sel.zoom.length && z; i++) z = z.kids.get(sel.zoom[i]);
  if (!z || !z.v[f]) { z = root; sel.zoom = []; }
  fgState.zoom = z;
  if (!root.v[f]) {
    box.appendChild(el('p', 'empty', 'No ' + M.h + ' in this selection.'));
    box.style.height = '';
    $('fg-path').textContent = '';
    return;
  }
  for (a = z; a; a = a.parent) chain.unshift(a);
  chain.forEach(function (n, i) { flameNode(box, n, 0, 1, i, n !== z); });
  $('fg-path').textContent = chain.length > 1 ? 'zoomed: ' + chain.slice(1).map(function (n) { return n.name; }).join(' \u2192 ') : '';
  var total = z.v[f], min = total / 2400;
  depth = chain.length;
  (function layout(node, x0, d) {
    var kids = Array.from(node.kids.values()).filter(function (k) { return k.v[f] >= min && k.v[f] > 0; });
    kids.sort(function (p, q) { return q.v[f] - p.v[f] || (p.name < q.name ? -1 : 1); });
    var x = x0;
    kids.forEach(function (k) {
      flameNode(box, k, x, k.v[f] / total, d, false);
      if (d + 1 > depth) depth = d + 1;
      layout(k, x, d + 1);
      x += k.v[f] / total;
    });
  })(z, 0, chain.length);
  box.style.height = (depth * ROW + 2) + 'px';
}
var fgState = { root: null, zoom: null };
function flameInit() {
  var box = $('flamegraph'), tip = $('fg-tip');
  box.addEventListener('click', function (e) {
    var n = e.target.fgNode, path = [];
    if (!n) return;
    for (; n.parent; n = n.parent) path.unshift(n.name);
    sel.zoom = path;
    flame();
  });
  box.addEventListener('mousemove', function (e) {
    var n = e.target.fgNode, M = METRICS[sel.metric];
    if (!n) { tip.hidden = true; return; }
    tip.textContent = '';
    tip.appendChild(el('div', 'n', n.name));
    if (n.frame >= 0) {
      var F = V.frames[n.frame];
      if (STR[F[1]] || STR[F[3]]) tip.appendChild(el('div', 'n', STR[F[1]] ? STR[F[1]] + (F[2] ? ':' + F[2] : '') : STR[F[3]]));
    }
    tip.appendChild(el('div', '', M.h + ': ' + M.fmt(n.v[M.f]) + ' (' + pct(n.v[M.f], fgState.root.v[M.f]) + ' of the selection)'));
    tip.appendChild(el('div', '', 'allocations: ' + num(n.v[0]) + ', allocated ' + bytes(n.v[1]) + ', leaked ' + bytes(n.v[3])));
    tip.hidden = false;
    var tx = e.clientX + 14, ty = e.clientY + 14;
    if (tx + tip.offsetWidth > window.innerWidth) tx = Math.max(0, e.clientX - tip.offsetWidth - 14);
    if (ty + tip.offsetHeight > window.innerHeight) ty = Math.max(0, e.clientY - tip.offsetHeight - 14);
    tip.style.left = tx + 'px';
    tip.style.top = ty + 'px';
  });
  box.addEventListener('mouseleave', function () { tip.hidden = true; });
}

var siteOrder = { col: 2, dir: -1 };

/* the sites of the selection; with a search, those with a matching frame */
function sites() {
  var by = new Map(), m = sel.match;
  for (var s = 0; s <= OTHER; s++) {
    var o = s * NF;
    if (!cur.st[o]) continue;
    if (m && !stackFrames(s).some(m)) continue;
    var id = s === OTHER ? -1 : V.stacks[s][0], r = by.get(id);
    if (!r) {
      var S = id < 0 ? null : V.sites[id];
      r = { name: S ? STR[S[0]] : OTHER_NAME, file: S ? STR[S[1]] : '', line: S ? S[2] : 0, module: S ? STR[S[3]] : '',
            allocations: 0, allocated_bytes: 0, leaked_allocations: 0, leaked_bytes: 0, peak_bytes: 0, temporary_allocations: 0 };
      by.set(id, r);
    }
    r.allocations += cur.st[o]; r.allocated_bytes += cur.st[o + 1]; r.leaked_allocations += cur.st[o + 2];
    r.leaked_bytes += cur.st[o + 3]; r.peak_bytes += cur.st[o + 4]; r.temporary_allocations += cur.st[o + 5];
  }
  table('sites', [SITE, { h: 'Module', cls: 'fn', key: function (r) { return (r.module || '').replace(/.*\//, ''); } },
    col('Allocated', 'allocated_bytes', bytes), col('Allocations', 'allocations'), col('Leaked', 'leaked_bytes', bytes),
    col('Leaked allocs', 'leaked_allocations'), col('At peak', 'peak_bytes', bytes),
    col('Temporary', 'temporary_allocations')], Array.from(by.values()),
    m ? 'No site in this selection has a frame that matches the search.' : 'Nothing was allocated in this selection.', siteOrder);
}

/* ---- histogram of the sizes asked for, log2 classes ---- */
function sizeLabel(k) { return k ? bytes(Math.pow(2, k)) + '\u2013' + bytes(Math.pow(2, k + 1) - 1) : '0\u20131 B'; }
function histogram() {
  var box = $('histogram'), keys = Object.keys(cur.hist).map(Number).sort(function (a, b) { return a - b; });
  box.textContent = '';
  if (!keys.length) { box.appendChild(el('p', 'empty', 'No allocation in this selection.')); return; }
  var lo = keys[0], hi = keys[keys.length - 1], n = hi - lo + 1, W = Math.max(box.clientWidth, 320), H = 260;
  var L = 70, R = 12, T = 14, B = 58, max = 1, k;
  for (k = lo; k <= hi; k++) if (cur.hist[k]) max = Math.max(max, cur.hist[k][0]);
  var step = Math.max(1, nice(max / 4)), top = Math.ceil(max / step) * step, bw = (W - L - R) / n;
  var y = function (v) { return T + (H - T - B) * (1 - v / top); };
  var svg = sv('svg', { id: 'hist-svg', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
  svg.appendChild(sv('title', {}, 'Allocations by size asked for'));
  for (var v = 0; v <= top; v += step) {
    svg.appendChild(sv('line', { 'class': 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v) }));
    svg.appendChild(sv('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, num(v)));
  }
  for (k = lo; k <= hi; k++) {
    var c = cur.hist[k] || [0, 0], x = L + (k - lo) * bw;
    var r = sv('rect', { 'class': 'hist-bar', x: x + 2, y: y(c[0]), width: Math.max(1, bw - 4), height: y(0) - y(c[0]),
      'data-class': k, 'data-count': c[0], 'data-bytes': c[1] });
    r.appendChild(sv('title', {}, sizeLabel(k) + ': ' + num(c[0]) + ' allocations, ' + bytes(c[1])));
    svg.appendChild(r);
    if (n <= 24 || (k - lo) % Math.ceil(n / 24) === 0)
      svg.appendChild(sv('text', { x: x + bw / 2, y: H - B + 16, 'text-anchor': 'middle' }, k ? bytes(Math.pow(2, k)) : '0'));
  }
  svg.appendChild(sv('line', { 'class': 'axis', x1: L, x2: W - R, y1: y(0), y2: y(0) }));
  svg.appendChild(sv('text', { x: L + (W - L - R) / 2, y: H - 12, 'text-anchor': 'middle', 'class': 'axis-title' },
    'size asked for (each bar: from that size to just under twice it)'));
  svg.appendChild(sv('text', { x: 14, y: T + (H - T - B) / 2, 'text-anchor': 'middle', 'class': 'axis-title',
    transform: 'rotate(-90 14 ' + (T + (H - T - B) / 2) + ')' }, 'allocations'));
  box.appendChild(svg);
}

/* ---- memory over time, drawn at the width it has (text stays 12 px);
 * drag across it to choose a time range ---- */
var chartGeo = null;
function chart() {
  var s = D.series, n = s.length / 2, box = $('chart'), W = Math.max(box.clientWidth - 2, 320), H = 300;
  var L = 84, R = 16, T = 16, B = 46, i;
  var tmax = Math.max(s[s.length - 2] || 0, V.nbuckets * V.bucket_ns, 1), ymax = 1, peak = 0;
  var rs = D.rss ? D.rss.series : [];
  for (i = 0; i < n; i++) if (s[2 * i + 1] > s[2 * peak + 1]) peak = i;
  ymax = Math.max(s[2 * peak + 1] || 0, 1);
  /* --rss: resident memory on the same axes (a sample holds until the next) */
  for (i = 0; i < rs.length; i++) {
    ymax = Math.max(ymax, rs[i][1] + rs[i][2] + rs[i][3]);
    tmax = Math.max(tmax, rs[i][0]);
  }
  var ystep = byteStep(ymax), ytop = Math.ceil(ymax / ystep) * ystep;
  var x = function (t) { return L + (W - L - R) * t / tmax; };
  var y = function (b) { return T + (H - T - B) * (1 - b / ytop); };
  box.textContent = '';
  var svg = sv('svg', { id: 'chart-svg', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
  svg.appendChild(sv('title', {}, 'Live heap bytes over time'));
  for (var v = 0; v <= ytop; v += ystep) {
    svg.appendChild(sv('line', { 'class': 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v) }));
    svg.appendChild(sv('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, bytes(v)));
  }
  var xstep = Math.max(1, nice(tmax / Math.max(2, Math.floor((W - L - R) / 110))));
  for (var t = 0; t <= tmax; t += xstep) {
    svg.appendChild(sv('line', { 'class': 'grid', x1: x(t), x2: x(t), y1: T, y2: H - B }));
    svg.appendChild(sv('text', { x: x(t), y: H - B + 16, 'text-anchor': x(t) > W - R - 30 ? 'end' : 'middle' }, dur(t)));
  }
  svg.appendChild(sv('text', { x: L + (W - L - R) / 2, y: H - 8, 'text-anchor': 'middle', 'class': 'axis-title' }, 'time since the trace started'));
  svg.appendChild(sv('text', { x: 14, y: T + (H - T - B) / 2, 'text-anchor': 'middle', 'class': 'axis-title',
    transform: 'rotate(-90 14 ' + (T + (H - T - B) / 2) + ')' }, 'live heap (bytes)'));
  svg.appendChild(sv('line', { 'class': 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B }));
  svg.appendChild(sv('line', { 'class': 'axis', x1: L, x2: L, y1: T, y2: H - B }));
  var selRect = sv('rect', { 'class': 'chart-sel', y: T, height: H - T - B, x: L, width: 0, visibility: 'hidden' });
  svg.appendChild(selRect);
  if (n) {
    /* a step line: the live bytes hold until the next change */
    var d = 'M' + x(s[0]).toFixed(1) + ' ' + y(s[1]).toFixed(1);
    for (i = 1; i < n; i++) d += 'H' + x(s[2 * i]).toFixed(1) + 'V' + y(s[2 * i + 1]).toFixed(1);
    svg.appendChild(sv('path', { 'class': 'chart-area', d: d + 'V' + y(0) + 'H' + x(s[0]) + 'Z' }));
    svg.appendChild(sv('path', { 'class': 'chart-line', d: d }));
    var px = x(s[2 * peak]), py = y(s[2 * peak + 1]);
    svg.appendChild(sv('circle', { 'class': 'peak-marker', cx: px, cy: py, r: 5 }));
    var label = 'peak ' + bytes(s[2 * peak + 1]) + ' at ' + dur(s[2 * peak]);
    var right = px > W - 260;
    svg.appendChild(sv('text', { 'class': 'peak-label', x: right ? px - 10 : px + 10, y: Math.max(py - 8, T + 12),
      'text-anchor': right ? 'end' : 'start' }, label));
  }
  if (rs.length) {
    var rssLine = function (cls, value) {
      var dd = 'M' + x(rs[0][0]).toFixed(1) + ' ' + y(value(rs[0])).toFixed(1);
      for (var k = 1; k < rs.length; k++) dd += 'H' + x(rs[k][0]).toFixed(1) + 'V' + y(value(rs[k])).toFixed(1);
      svg.appendChild(sv('path', { 'class': cls, d: dd }));
    };
    rssLine('rss-line', function (p) { return p[1] + p[2] + p[3]; });
    rssLine('rss-anon-line', function (p) { return p[1]; });
  }
  var hl = sv('line', { 'class': 'hover-line', y1: T, y2: H - B, visibility: 'hidden' });
  var ht = sv('text', { 'class': 'hover-label', y: T + 12, visibility: 'hidden' });
  svg.appendChild(hl);
  svg.appendChild(ht);
  chartGeo = { x: x, L: L, R: R, W: W, tmax: tmax, rect: selRect };
  function timeAt(e) {
    var r = svg.getBoundingClientRect(), vx = (e.clientX - r.left) * W / r.width;
    return { vx: vx, t: Math.max(0, Math.min(tmax, (vx - L) * tmax / (W - L - R))) };
  }
  var drag = null;
  svg.addEventListener('mousedown', function (e) { drag = timeAt(e).t; e.preventDefault(); });
  window.addEventListener('mouseup', function (e) {
    if (drag === null) return;
    var a = drag, b = timeAt(e).t;
    drag = null;
    if (a > b) { var tt = a; a = b; b = tt; }
    if (!V.bucket_ns) return;
    /* the range snaps outwards to whole buckets: the sums are per bucket */
    setRange(Math.floor(a / V.bucket_ns), Math.max(Math.ceil(b / V.bucket_ns), Math.floor(a / V.bucket_ns) + 1));
  });
  svg.addEventListener('mousemove', function (e) {
    var p = timeAt(e), vx = p.vx;
    if (drag !== null) {
      var a = Math.min(drag, p.t), b = Math.max(drag, p.t);
      selRect.setAttribute('x', x(a)); selRect.setAttribute('width', Math.max(1, x(b) - x(a)));
      selRect.setAttribute('visibility', 'visible');
    }
    if (vx < L || vx > W - R || !n) return;
    var lo = 0, hi = n - 1;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (s[2 * mid] <= p.t) lo = mid; else hi = mid - 1; }
    hl.setAttribute('x1', vx); hl.setAttribute('x2', vx);
    ht.setAttribute('x', vx > W / 2 ? vx - 6 : vx + 6);
    ht.setAttribute('text-anchor', vx > W / 2 ? 'end' : 'start');
    ht.textContent = 'heap ' + bytes(s[2 * lo + 1]) + rssAt(rs, p.t) + ' at ' + dur(Math.round(p.t));
    hl.setAttribute('visibility', 'visible'); ht.setAttribute('visibility', 'visible');
  });
  svg.addEventListener('mouseleave', function () {
    hl.setAttribute('visibility', 'hidden'); ht.setAttribute('visibility', 'hidden');
  });
  box.appendChild(svg);
}
/* ", resident X (anon Y)" at time T from the --rss samples RS, or "". */
function rssAt(rs, t) {
  if (!rs.length || t < rs[0][0]) return '';
  var lo = 0, hi = rs.length - 1;
  while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (rs[mid][0] <= t) lo = mid; else hi = mid - 1; }
  return ', resident ' + bytes(rs[lo][1] + rs[lo][2] + rs[lo][3]) + ' (anon ' + bytes(rs[lo][1]) + ')';
}
function chartSelection() {
  var g = chartGeo, whole = sel.b0 === 0 && sel.b1 >= V.nbuckets;
  if (!g) return;
  if (whole) { g.rect.setAttribute('visibility', 'hidden'); return; }
  var a = g.x(Math.min(sel.b0 * V.bucket_ns, g.tmax)), b = g.x(Math.min(sel.b1 * V.bucket_ns, g.tmax));
  g.rect.setAttribute('x', a); g.rect.setAttribute('width', Math.max(1, b - a));
  g.rect.setAttribute('visibility', 'visible');
}

function wholeTraceTables() {
  if (D.zones.length) {
    $('zones-sec').hidden = false;
    table('zones', [{ h: 'Zone', cls: 'fn', key: function (r) { return r.name; } }, col('Entered', 'count'),
      col('Time', 'time_ns', dur), col('Allocations', 'allocations'), col('Allocated', 'allocated_bytes', bytes),
      col('Incl. allocations', 'inclusive_allocations'), col('Incl. allocated', 'inclusive_allocated_bytes', bytes),
      col('Peak', 'peak_bytes', bytes), col('Leaked', 'leaked_bytes', bytes)], D.zones.slice(), '');
  }
  var F = D.frames;
  if (F.count) {
    $('frames-sec').hidden = false;
    $('frames-note').textContent = num(F.count) + ' frame marks; the frames that allocate most, with their top sites.' +
      (F.tail_allocations ? ' After the last mark: ' + bytes(F.tail_allocated_bytes) + ' in ' + num(F.tail_allocations) + ' allocations.' : '');
    table('frames', [col('Frame', 'index'), { h: 'Label', key: function (r) { return r.name || ''; } },
      col('Ends at', 'end_ns', dur), col('Duration', 'duration_ns', dur), col('Allocations', 'allocations'),
      col('Allocated', 'allocated_bytes', bytes),
      { h: 'Top sites', cls: 'fn', key: function (r) { return r.sites.length ? r.sites[0].name : ''; },
        cell: function (td, r) {
          r.sites.forEach(function (s) { td.appendChild(el('span', 'loc', s.name + '  ' + bytes(s.allocated_bytes) + ' in ' + num(s.allocations))); });
        } }], F.top.slice(), '');
  }
  if (D.pools.length) {
    $('pools-sec').hidden = false;
    table('pools', [{ h: 'Pool', cls: 'fn', key: function (r) { return r.name; } }, col('Allocations', 'allocations'),
      col('Allocated', 'allocated_bytes', bytes), col('Frees', 'frees'), col('Resets', 'resets'),
      col('Peak', 'peak_bytes', bytes), col('Leaked', 'leaked_bytes', bytes),
      col('Leaked allocations', 'leaked_allocations')], D.pools.slice(), '');
  }
  if (D.threads.length) {
    $('threads-sec').hidden = false;
    table('threads', [col('Thread id', 'tid', String), { h: 'Name', cls: 'fn', key: function (r) { return r.name; } }],
      D.threads.slice(), '');
  }
}

/* #selftest (tests/e2e/html.sh): drive the flame graph as a user would,
 * since a headless browser only dumps the page; the outcome goes into
 * data-selftest. */
function selftest() {
  var box = $('flamegraph'), tip = $('fg-tip'), nodes = box.querySelectorAll('.fg-node'), r = [];
  if (!nodes.length) {
    html.setAttribute('data-selftest', fgState.root.v[1] ? 'no flame graph drawn' : 'ok: nothing allocated');
    return;
  }
  var deep = nodes[nodes.length - 1], name = deep.fgNode.name, rect = deep.getBoundingClientRect();
  deep.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: rect.left + 2, clientY: rect.top + 2 }));
  if (tip.hidden || tip.textContent.indexOf(name) < 0) r.push('no tooltip for ' + name);
  deep.dispatchEvent(new MouseEvent('click', { bubbles: true }));
  if (fgState.zoom.name !== name || $('fg-path').textContent.indexOf(name) < 0) r.push('click did not zoom to ' + name);
  $('fg-reset').click();
  if (fgState.zoom !== fgState.root) r.push('reset did not unzoom');
  var radios = document.querySelectorAll('input[name=fg-metric]');
  for (var m = radios.length - 1; m >= 0; m--) {
    radios[m].checked = true;
    radios[m].dispatchEvent(new Event('change'));
    if (sel.metric !== m) r.push('metric ' + m + ' not selected');
    if (isNaN(fgState.root.v[METRICS[m].f])) r.push('metric ' + m + ' summed to NaN');
    if (fgState.root.v[METRICS[m].f] && !box.querySelector('.fg-node')) r.push('metric ' + m + ' drew nothing');
  }
  html.setAttribute('data-selftest', r.length ? r.join('; ') : 'ok');
}

header();
controls();
chart();
flameInit();
update();
wholeTraceTables();
rssViews();
var resized = 0;
window.addEventListener('resize', function () {
  clearTimeout(resized);
  resized = setTimeout(function () { chart(); chartSelection(); histogram(); rssChart(); }, 100);
});
if (location.hash === '#selftest') selftest();
if (html.getAttribute('data-status') === 'loading') html.setAttribute('data-status', 'ok');
html.setAttribute('data-ready', '1');
