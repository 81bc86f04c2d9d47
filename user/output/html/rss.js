/* ---- --rss: where the resident memory goes. Every figure is report
 * --json's "rss" (report_json.c writes it for both), laid out as the text
 * report lays it out: this script adds nothing up and splits nothing. ---- */

/* the reconciliation's rows: [key in reconciled_last/_peak, label, when] */
var RC_ROWS = [
  ['heap_live_resident_bytes', 'live heap on resident pages', 'heap'],
  ['allocator_free_resident_bytes', 'held by the allocator, not live (free, headers)', 'heap'],
  ['allocator_resident_bytes', 'the allocator\u2019s, live and free together', 'noheap'],
  ['outside_resident_bytes', 'mapped by the program outside the allocator'],
  ['thread_stacks_bytes', 'thread stacks'],
  ['file_private_bytes', 'files\u2019 private pages (.data, .bss, relro)'],
  ['other_bytes', 'the rest (mapped before tracing: exec, -p)'],
  ['resident_anon_bytes', '= resident anonymous pages (pagemap)', 'sum'],
  ['rss_anon_bytes', 'the kernel\u2019s RssAnon then'],
  ['rss_file_bytes', 'beside it: files\u2019 pages (RssFile)', 'file'],
  ['rss_shmem_bytes', 'beside it: shared memory (RssShmem)', 'file'],
  ['heap_live_bytes', 'live heap then', 'heap'],
  ['heap_live_not_resident_bytes', 'of it not resident (never touched, swapped)', 'heap']];

/* the parts stacked over time, bottom up: [column of reconciled_series,
 * row key, label, colour (Okabe-Ito: apart for every colour vision), when] */
var RC_PARTS = [
  [2, 'heap_live_resident_bytes', 'live heap on resident pages', '#d55e00', 'heap'],
  [3, 'allocator_free_resident_bytes', 'held by the allocator, not live', '#e69f00', 'heap'],
  [4, 'allocator_resident_bytes', 'the allocator\u2019s, live and free', '#d55e00', 'noheap'],
  [5, 'outside_resident_bytes', 'mapped by the program outside the allocator', '#0072b2'],
  [6, 'thread_stacks_bytes', 'thread stacks', '#009e73'],
  [7, 'file_private_bytes', 'files\u2019 private pages', '#cc79a7'],
  [8, 'other_bytes', 'the rest', '#999999']];

function rcParts(S) {
  var known = S.length && S[S.length - 1][2] !== null;
  return RC_PARTS.filter(function (p) { return !((p[4] === 'heap' && !known) || (p[4] === 'noheap' && known)); });
}

/* the reconciliation of every snapshot kept, its parts stacked, the
 * kernel's RssAnon dotted over them; hover for a moment's parts */
function rssChart() {
  var R = D.rss, S = R && R.reconciled_series, box = $('rss-chart');
  if (!S || !S.length) {
    $('rss-chart-sec').hidden = true;
    return;
  }
  var parts = rcParts(S), rs = R.series || [], W = Math.max(box.clientWidth - 2, 320), H = 280;
  var L = 84, R_ = 16, T = 16, B = 46, i, k, ymax = 1;
  var tmax = Math.max(S[S.length - 1][0], D.trace.duration_ns || 0, 1);
  for (i = 0; i < S.length; i++) ymax = Math.max(ymax, S[i][1], S[i][9]);
  for (i = 0; i < rs.length; i++) ymax = Math.max(ymax, rs[i][1]);
  var ystep = byteStep(ymax), ytop = Math.ceil(ymax / ystep) * ystep;
  var x = function (t) { return L + (W - L - R_) * Math.min(t, tmax) / tmax; };
  var y = function (b) { return T + (H - T - B) * (1 - b / ytop); };
  box.textContent = '';
  var svg = sv('svg', { id: 'rss-chart-svg', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
  svg.appendChild(sv('title', {}, 'Resident anonymous memory over time, by part'));
  for (var v = 0; v <= ytop; v += ystep) {
    svg.appendChild(sv('line', { 'class': 'grid', x1: L, x2: W - R_, y1: y(v), y2: y(v) }));
    svg.appendChild(sv('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, bytes(v)));
  }
  var xstep = Math.max(1, nice(tmax / Math.max(2, Math.floor((W - L - R_) / 110))));
  for (var t = 0; t <= tmax; t += xstep)
    svg.appendChild(sv('text', { x: x(t), y: H - B + 16, 'text-anchor': x(t) > W - R_ - 30 ? 'end' : 'middle' }, dur(t)));
  svg.appendChild(sv('text', { x: L + (W - L - R_) / 2, y: H - 8, 'text-anchor': 'middle', 'class': 'axis-title' }, 'time since the trace started'));
  svg.appendChild(sv('text', { x: 14, y: T + (H - T - B) / 2, 'text-anchor': 'middle', 'class': 'axis-title',
    transform: 'rotate(-90 14 ' + (T + (H - T - B) / 2) + ')' }, 'resident anon (bytes)'));
  /* each snapshot holds until the next, the last one until the last sample */
  var base = S.map(function () { return 0; }), n = S.length;
  var end = Math.max(x(S[n - 1][0]) + 2, rs.length ? x(rs[rs.length - 1][0]) : 0);
  parts.forEach(function (p) {
    var top = S.map(function (s, j) { return base[j] + s[p[0]]; }), d = '', j;
    for (j = 0; j < S.length; j++) d += (j ? 'H' : 'M') + x(S[j][0]).toFixed(1) + (j ? 'V' : ' ') + y(top[j]).toFixed(1);
    d += 'H' + end.toFixed(1) + 'V' + y(base[n - 1]).toFixed(1);
    for (j = n - 1; j > 0; j--) d += 'H' + x(S[j][0]).toFixed(1) + 'V' + y(base[j - 1]).toFixed(1);
    d += 'H' + x(S[0][0]).toFixed(1);
    svg.appendChild(sv('path', { 'class': 'rc-part', d: d + 'Z', fill: p[3], 'data-key': p[1],
      'data-values': S.map(function (s) { return s[p[0]]; }).join(',') }));
    base = top;
  });
  if (rs.length) {
    var dd = 'M' + x(rs[0][0]).toFixed(1) + ' ' + y(rs[0][1]).toFixed(1);
    for (k = 1; k < rs.length; k++) dd += 'H' + x(rs[k][0]).toFixed(1) + 'V' + y(rs[k][1]).toFixed(1);
    svg.appendChild(sv('path', { 'class': 'rc-rss-anon', d: dd }));
  }
  svg.appendChild(sv('line', { 'class': 'axis', x1: L, x2: W - R_, y1: H - B, y2: H - B }));
  svg.appendChild(sv('line', { 'class': 'axis', x1: L, x2: L, y1: T, y2: H - B }));
  var hl = sv('line', { 'class': 'hover-line', y1: T, y2: H - B, visibility: 'hidden' });
  svg.appendChild(hl);
  box.appendChild(svg);
  var legend = $('rss-legend');
  function at(j) {
    var s = S[j];
    legend.textContent = '';
    legend.setAttribute('data-index', String(j));
    legend.appendChild(el('span', 'rc-when', 'Snapshot at ' + dur(s[0]) + ':'));
    parts.slice().reverse().forEach(function (p) {
      var it = el('span', 'rc-item');
      it.setAttribute('data-key', p[1]);
      it.setAttribute('data-value', String(s[p[0]]));
      var sw = el('i');
      sw.style.background = p[3];
      it.appendChild(sw);
      it.appendChild(document.createTextNode(p[2] + ' ' + bytes(s[p[0]])));
      legend.appendChild(it);
    });
    var sum = el('span', 'rc-item rc-sum', '= resident anonymous ' + bytes(s[1]) + ' (RssAnon ' + bytes(s[9]) + ')');
    sum.setAttribute('data-key', 'resident_anon_bytes');
    sum.setAttribute('data-value', String(s[1]));
    legend.appendChild(sum);
  }
  at(S.length - 1);
  svg.addEventListener('mousemove', function (e) {
    var r = svg.getBoundingClientRect(), vx = (e.clientX - r.left) * W / r.width;
    if (vx < L || vx > W - R_) return;
    var tt = (vx - L) * tmax / (W - L - R_), lo = 0, hi = S.length - 1;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (S[mid][0] <= tt) lo = mid; else hi = mid - 1; }
    hl.setAttribute('x1', vx); hl.setAttribute('x2', vx); hl.setAttribute('visibility', 'visible');
    at(lo);
  });
  svg.addEventListener('mouseleave', function () { hl.setAttribute('visibility', 'hidden'); at(S.length - 1); });
}

/* a cell of exact bytes: shown rounded, the exact figure in data-value and its title */
function bytesCell(tr, v, attrs) {
  var td = el('td', 'num', v === null || v === undefined ? '-' : bytes(v));
  if (v !== null && v !== undefined) {
    td.setAttribute('data-value', String(v));
    td.title = num(v) + ' bytes';
  }
  for (var k in attrs || {}) td.setAttribute(k, attrs[k]);
  tr.appendChild(td);
  return td;
}

/* a fixed table (the rows in the text report's order): HEAD, then ROWS of [label, cells...] */
function fixedTable(box, head, rows) {
  var t = el('table'), tr = el('tr'), tb = el('tbody');
  head.forEach(function (h, i) { tr.appendChild(el('th', i ? 'num' : '', h)); });
  var th = el('thead');
  th.appendChild(tr);
  t.appendChild(th);
  rows.forEach(function (r) { tb.appendChild(r); });
  t.appendChild(tb);
  box.textContent = '';
  box.appendChild(t);
}

function rssSamples(R) {
  var rows = [];
  [['first', R.first], ['peak', R.peak], ['last', R.last]].forEach(function (w) {
    if (!w[1]) return;
    var tr = el('tr');
    tr.setAttribute('data-key', w[0]);
    tr.appendChild(el('td', '', w[0]));
    bytesCell(tr, w[1].resident_bytes, { 'data-key': 'resident_bytes' });
    bytesCell(tr, w[1].anon_bytes, { 'data-key': 'anon_bytes' });
    bytesCell(tr, w[1].file_bytes, { 'data-key': 'file_bytes' });
    bytesCell(tr, w[1].shmem_bytes, { 'data-key': 'shmem_bytes' });
    bytesCell(tr, R.heap_known ? w[1].heap_bytes : null, { 'data-key': 'heap_bytes' });
    tr.appendChild(el('td', 'num', dur(w[1].time_ns)));
    rows.push(tr);
  });
  if (!rows.length) {
    $('rss-samples').appendChild(el('p', 'empty', 'No sample: the process ended before its first.'));
    return;
  }
  fixedTable($('rss-samples'), ['', 'resident', 'anon', 'file', 'shmem', 'live heap', 'at'], rows);
}

/* /proc/PID/smaps_rollup at the start and the end: the lines the text report shows */
function rssRollups(R) {
  var box = $('rss-rollup');
  box.textContent = '';
  [['start', R.rollup_start], ['end', R.rollup_end]].forEach(function (w) {
    if (!w[1]) return;
    var p = el('p', 'note', 'smaps_rollup at the ' + w[0] + ': ');
    p.setAttribute('data-when', w[0]);
    ['Rss', 'Pss', 'Anonymous', 'Private_Dirty', 'Swap'].forEach(function (k) {
      var v = w[1].lines[k];
      if (v === undefined) return;
      var s = el('span', 'rollup', k + ' ' + bytes(v) + ' ');
      s.setAttribute('data-key', k);
      s.setAttribute('data-value', String(v));
      s.title = num(v) + ' bytes';
      p.appendChild(s);
    });
    box.appendChild(p);
  });
}

/* resident anonymous memory added up, at the last snapshot and at the one
 * of most resident anonymous memory (a second column only when it is another) */
function rssReconcile(R) {
  var box = $('rss-reconcile'), e = R.reconciled_last, p = R.reconciled_peak;
  if (!e) {
    box.appendChild(el('p', 'empty', 'No pagemap snapshot was taken (the process ended before its first): the parts are not known.'));
    return;
  }
  var cols = [['last', e]], known = e.heap_live_resident_bytes !== null, rows = [];
  if (p && p.time_ns !== e.time_ns) cols.push(['peak', p]);
  RC_ROWS.forEach(function (r) {
    if ((r[2] === 'heap' && !known) || (r[2] === 'noheap' && known)) return;
    if (r[2] === 'file' && !e.rss_file_bytes && !e.rss_shmem_bytes) return;
    var tr = el('tr', r[2] === 'sum' ? 'sum' : ''), label = el('td', '', r[1]);
    tr.setAttribute('data-key', r[0]);
    RC_PARTS.forEach(function (p) {
      if (p[1] !== r[0]) return;
      var sw = el('i', 'rc-swatch');
      sw.style.background = p[3];
      label.insertBefore(sw, label.firstChild);
    });
    tr.appendChild(label);
    cols.forEach(function (c) { bytesCell(tr, c[1][r[0]], { 'data-col': c[0] }); });
    rows.push(tr);
  });
  fixedTable(box, [''].concat(cols.map(function (c) { return c[0] + ' ' + dur(c[1].time_ns); })), rows);
  if (!known)
    box.appendChild(el('p', 'note', 'The live heap does not split the allocator\u2019s part: ' + (R.heap_known ?
      'blocks allocated before the recording began are not in the trace.' : 'not every allocation was recorded.')));
  if (e.advice) box.appendChild(el('p', 'warn', 'Advice: ' + e.advice));
  mapSiteTable('rss-outside', e.outside_sites, 'resident_bytes', 'Resident', null,
    'Nothing mapped by the program outside the allocator is resident at the last snapshot.');
}

/* a table of sites (report_json.c's map_sites): bytes under KEY, a count under COUNT */
function mapSiteTable(id, list, key, h, count, empty) {
  var rows = (list || []).map(function (s) {
    var r = { name: s.name, file: s.file || '', line: s.line, module: s.module || '', bytes: s[key], count: count ? s[count] : 0 };
    r.attrs = { 'data-name': s.name, 'data-line': String(s.line || 0), 'data-bytes': String(s[key]) };
    if (count) r.attrs['data-count'] = String(s[count]);
    return r;
  });
  var cols = [SITE, { h: 'Module', cls: 'fn', key: function (r) { return r.module.replace(/.*\//, ''); } }, col(h, 'bytes', bytes)];
  if (count) cols.push(col(count.charAt(0).toUpperCase() + count.slice(1), 'count'));
  table(id, cols, rows, empty, { col: 2, dir: -1 });
}

function rssMaps(R) {
  var M = R.maps, box = $('rss-maps-note');
  if (!M) {
    box.textContent = 'The calls that map memory were not traced.';
    return;
  }
  box.textContent = 'Anonymous memory the program mapped itself, outside any allocator call, still mapped at the end: ' +
    bytes(M.outside_bytes) + ' (at most ' + bytes(M.outside_peak_bytes) + '), by the site of the mmap. The allocator\u2019s: ' +
    bytes(M.allocator_bytes) + ' mmap\u2019d and still mapped, the heap\u2019s break ' + bytes(M.brk_bytes) +
    ' above where it was first seen; madvise gave back ' + bytes(M.madvised_bytes) + ' (calls: mmap ' + num(M.calls.mmap) +
    ', munmap ' + num(M.calls.munmap) + ', brk ' + num(M.calls.brk) + ', mremap ' + num(M.calls.mremap) + ', madvise ' +
    num(M.calls.madvise) + ').';
  box.setAttribute('data-outside', String(M.outside_bytes));
  box.setAttribute('data-allocator', String(M.allocator_bytes));
  mapSiteTable('rss-maps', M.sites, 'bytes', 'Still mapped', 'mappings', 'The program mapped no anonymous memory of its own that is still mapped.');
  var G = M.glibc;
  $('rss-glibc').textContent = !G ? 'glibc\u2019s allocator probes (arenas, heaps, trims): not in the target\u2019s C library.' :
    'glibc\u2019s allocator (its own probes): ' + num(G.arenas_new) + ' arenas made, ' + num(G.arenas_reused) +
    ' taken by another thread; the main heap grown ' + num(G.sbrk_more) + ' times by brk (' + bytes(G.sbrk_more_bytes) +
    '), trimmed ' + num(G.sbrk_less) + ' times (' + bytes(G.sbrk_less_bytes) + ' given back); other arenas\u2019 heaps: ' +
    num(G.heaps_new) + ' mapped (' + bytes(G.heap_new_bytes) + '), grown ' + num(G.heaps_grown) + ' times (' +
    bytes(G.heap_grown_bytes) + '), shrunk ' + num(G.heaps_shrunk) + ' times (' + bytes(G.heap_shrunk_bytes) + '), ' +
    num(G.heaps_freed) + ' unmapped (' + bytes(G.heap_freed_bytes) + '); allocations retried in another arena: ' + num(G.retries) + '.' +
    (G.mallopt.length ? ' ' + G.mallopt.map(function (m) { return 'mallopt(' + (m.name || m.param) + ', ' + m.value + ')'; }).join(', ') +
      (G.mallopt_calls > G.mallopt.length ? ' and ' + num(G.mallopt_calls - G.mallopt.length) + ' more mallopt calls' : '') + '.' : '') +
    (G.arena_sites.length ? ' Arenas made by: ' + G.arena_sites.map(function (s) {
      return s.name + (s.file ? ' (' + s.file.split('/').pop() + ':' + s.line + ')' : '') + ' ' + num(s.arenas);
    }).join(', ') + '.' : '');
}

function rssFaults(R) {
  var F = R.maps && R.maps.faults;
  if (!F || !F.samples) {
    $('rss-faults-note').textContent = 'No write fault was sampled.';
    return;
  }
  $('rss-faults-note').textContent = 'Pages first written (write faults, one in ' + F.sample_every + ' sampled, each standing for ' +
    F.sample_every + '): about ' + bytes(F.bytes) + ', by the site of the code that wrote them (past the C library\u2019s own, or the allocator call open).';
  $('rss-faults-note').setAttribute('data-bytes', String(F.bytes));
  mapSiteTable('rss-faults', F.sites, 'bytes', 'First written', 'samples', '');
}

function rssViews() {
  var R = D.rss;
  if (!R) return;
  $('rss-sec').hidden = false;
  rssSamples(R);
  rssRollups(R);
  rssReconcile(R);
  rssChart();
  rssMaps(R);
  rssFaults(R);
}
