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
    var tr = el('tr', r[2] === 'sum' ? 'sum' : '');
    tr.setAttribute('data-key', r[0]);
    tr.appendChild(el('td', '', r[1]));
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
    num(G.heaps_freed) + ' unmapped (' + bytes(G.heap_freed_bytes) + '); allocations retried in another arena: ' + num(G.retries) + '.';
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
  rssReconcile(R);
  rssMaps(R);
  rssFaults(R);
}
