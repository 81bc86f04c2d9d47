/* ---- memtrace diff --html: BASE against NEW. The flame graph merges both
 * traces' stacks by name path; a frame's width is the larger of its two
 * sides, its colour says whether it grew or shrank. The figures and their
 * changes are the C side's (diff --json); the script only adds stacks up. ---- */
var F = D.flame, DF = D.diff;
var METRICS = [
  { h: 'allocated bytes', f: 1, key: 'allocated_bytes', fmt: bytes }, { h: 'allocations', f: 0, key: 'allocations', fmt: num },
  { h: 'leaked bytes', f: 3, key: 'leaked_bytes', fmt: bytes }, { h: 'bytes live at the peak', f: 4, key: 'peak_bytes', fmt: bytes },
  { h: 'temporary allocations', f: 5, key: 'temporary_allocations', fmt: num }];
var metric = 0, zoomPath = [], fgState = { root: null, zoom: null }, ROW = 20;
function signed(fmt, v) { return (v > 0 ? '+' : v < 0 ? '\u2212' : '\u00b10 ') + (v ? fmt(Math.abs(v)) : ''); }

function diffHeader() {
  var a = F.base.trace, b = F.new.trace;
  document.title = 'memtrace diff: ' + (b.comm || 'trace');
  $('subtitle').textContent = 'base: ' + (a.command || a.comm || '') + '  \u00b7  new: ' + (b.command || b.comm || '');
  var box = $('cards');
  [['Allocated', 'allocated_bytes', bytes], ['Allocations', 'allocations', num], ['Leaked', 'leaked_bytes', bytes],
   ['Peak', 'peak_bytes', bytes], ['Temporary', 'temporary_allocations', num]].forEach(function (c) {
    var t = DF.totals[c[1]], d = el('div', 'card');
    d.id = 'tot-' + c[1];
    d.setAttribute('data-delta', String(t.delta));
    d.appendChild(el('div', 'k', c[0]));
    d.appendChild(el('div', 'v', signed(c[2], t.delta)));
    d.appendChild(el('div', 'd', c[2](t.a) + ' \u2192 ' + c[2](t.b)));
    box.appendChild(d);
  });
}

function diffTree() {
  var root = { name: 'all', a: [0, 0, 0, 0, 0, 0], b: [0, 0, 0, 0, 0, 0], kids: new Map(), parent: null };
  [['a', F.a], ['b', F.b]].forEach(function (side) {
    side[1].forEach(function (st) {
      var node = root, k, i;
      for (k = 0; k < 6; k++) root[side[0]][k] += st[0][k];
      for (i = 0; i < st[1].length; i++) {
        var name = F.names[st[1][i]], next = node.kids.get(name);
        if (!next) {
          next = { name: name, a: [0, 0, 0, 0, 0, 0], b: [0, 0, 0, 0, 0, 0], kids: new Map(), parent: node };
          node.kids.set(name, next);
        }
        for (k = 0; k < 6; k++) next[side[0]][k] += st[0][k];
        node = next;
      }
    });
  });
  return root;
}
/* a frame's width: the larger side, and at least what its callees need */
function width(n, f) {
  if (n.w !== undefined && n.wf === f) return n.w;
  var kids = 0;
  n.kids.forEach(function (k) { kids += width(k, f); });
  n.wf = f;
  n.w = Math.max(n.a[f], n.b[f], kids);
  return n.w;
}
function diffNode(box, node, x, w, depth, dim) {
  var f = METRICS[metric].f, d = node.b[f] - node.a[f];
  var d0 = el('div', 'fg-node ' + (d > 0 ? 'fg-grow' : d < 0 ? 'fg-shrink' : 'fg-same') + (dim ? ' fg-dim' : ''), node.name);
  d0.style.left = (100 * x) + '%';
  d0.style.width = (100 * w) + '%';
  d0.style.top = (depth * ROW) + 'px';
  d0.setAttribute('data-delta', String(d));
  d0.fgNode = node;
  box.appendChild(d0);
}
function diffFlame() {
  var box = $('flamegraph'), f = METRICS[metric].f, root = fgState.root, z = root, chain = [], a, depth;
  box.textContent = '';
  for (var i = 0; i < zoomPath.length && z; i++) z = z.kids.get(zoomPath[i]);
  if (!z || !width(z, f)) { z = root; zoomPath = []; }
  fgState.zoom = z;
  if (!width(root, f)) { box.appendChild(el('p', 'empty', 'No ' + METRICS[metric].h + ' in either trace.')); box.style.height = ''; return; }
  for (a = z; a; a = a.parent) chain.unshift(a);
  chain.forEach(function (n, i) { diffNode(box, n, 0, 1, i, n !== z); });
  var total = width(z, f), min = total / 2400;
  depth = chain.length;
  (function layout(node, x0, d) {
    var kids = Array.from(node.kids.values()).filter(function (k) { return width(k, f) >= min && width(k, f) > 0; });
    kids.sort(function (p, q) { return width(q, f) - width(p, f) || (p.name < q.name ? -1 : 1); });
    var x = x0;
    kids.forEach(function (k) {
      diffNode(box, k, x, width(k, f) / total, d, false);
      if (d + 1 > depth) depth = d + 1;
      layout(k, x, d + 1);
      x += width(k, f) / total;
    });
  })(z, 0, chain.length);
  box.style.height = (depth * ROW + 2) + 'px';
}
function diffFlameInit() {
  var box = $('flamegraph'), tip = $('fg-tip');
  fgState.root = diffTree();
  box.addEventListener('click', function (e) {
    var n = e.target.fgNode, path = [];
    if (!n) return;
    for (; n.parent; n = n.parent) path.unshift(n.name);
    zoomPath = path;
    diffFlame();
  });
  box.addEventListener('mousemove', function (e) {
    var n = e.target.fgNode, M = METRICS[metric];
    if (!n) { tip.hidden = true; return; }
    tip.textContent = '';
    tip.appendChild(el('div', 'n', n.name));
    tip.appendChild(el('div', '', M.h + ': ' + M.fmt(n.a[M.f]) + ' \u2192 ' + M.fmt(n.b[M.f]) + ' (' + signed(M.fmt, n.b[M.f] - n.a[M.f]) + ')'));
    tip.hidden = false;
    tip.style.left = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth) + 'px';
    tip.style.top = Math.min(e.clientY + 14, window.innerHeight - tip.offsetHeight) + 'px';
  });
  box.addEventListener('mouseleave', function () { tip.hidden = true; });
  document.querySelectorAll('input[name=fg-metric]').forEach(function (r) {
    r.addEventListener('change', function () { metric = +r.value; diffFlame(); diffSites(); });
  });
  $('fg-reset').addEventListener('click', function () { zoomPath = []; diffFlame(); });
  diffFlame();
}

var diffOrder = { col: 3, dir: -1 };
function diffSites() {
  var M = METRICS[metric];
  var rows = DF.sites.map(function (s) {
    var v = s[M.key];
    return { name: s.name, file: s.file, line: s.line, module: s.module, a: v.a, b: v.b, delta: v.delta,
      leaked: s.leaked_bytes.delta, attrs: { 'data-delta': String(v.delta) } };
  });
  function dcol(h, key, fmt) {
    return { h: h, num: true, key: function (r) { return r[key]; },
      cell: function (td, r) { td.textContent = signed(fmt, r[key]); td.className = 'num ' + (r[key] > 0 ? 'up' : r[key] < 0 ? 'down' : ''); } };
  }
  table('sites', [SITE, col('Base: ' + M.h, 'a', M.fmt), col('New: ' + M.h, 'b', M.fmt), dcol('Change', 'delta', M.fmt),
    dcol('Leaked bytes change', 'leaked', bytes)], rows, 'Neither trace allocated.', diffOrder);
}

diffHeader();
diffFlameInit();
diffSites();
if (html.getAttribute('data-status') === 'loading') html.setAttribute('data-status', 'ok');
html.setAttribute('data-ready', '1');
