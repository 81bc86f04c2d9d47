var html = document.documentElement;
window.onerror = function (msg) {
  html.setAttribute('data-status', 'error: ' + msg);
  document.title = 'error: ' + msg;
};
var D = JSON.parse(document.getElementById('memtrace-data').textContent);
var SVG = 'http://www.w3.org/2000/svg';

function $(id) { return document.getElementById(id); }
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}
function sv(tag, attrs, text) {
  var e = document.createElementNS(SVG, tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (text != null) e.textContent = text;
  return e;
}
function bytes(n) {
  var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(n < 10 ? 2 : 1) : String(n)) + ' ' + u[i];
}
function num(n) { return n.toLocaleString('en-US'); }
function dur(ns) {
  if (!ns) return '0';
  if (ns < 1e3) return ns + ' ns';
  if (ns < 1e6) return (ns / 1e3).toFixed(1) + ' µs';
  if (ns < 1e9) return (ns / 1e6).toFixed(1) + ' ms';
  return (ns / 1e9).toFixed(2) + ' s';
}
function pct(a, b) { return b ? (100 * a / b).toFixed(1) + '%' : '-'; }
/* 1, 2 or 5 times a power of ten, at least X */
function nice(x) {
  var p = Math.pow(10, Math.floor(Math.log10(x))), m = x / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}
/* tick step for a byte axis: nice in the unit the labels use */
function byteStep(max) {
  var unit = 1;
  while (max / unit >= 1024) unit *= 1024;
  return Math.max(1, nice(max / unit / 4) * unit);
}

/* ---- tables: click a header to sort by it ---- */
function table(id, cols, rows, empty, order) {
  var box = $(id);
  box.textContent = '';
  if (!rows.length) { box.appendChild(el('p', 'empty', empty)); return; }
  order = order || { col: -1, dir: 1 };
  var t = el('table'), thead = el('thead'), tr = el('tr'), tbody = el('tbody');
  function sort() {
    if (order.col < 0) return;
    var c = cols[order.col];
    rows.sort(function (p, q) {
      var a = c.key(p), b = c.key(q);
      return (a < b ? -1 : a > b ? 1 : 0) * order.dir;
    });
  }
  cols.forEach(function (c, i) {
    var th = el('th', c.num ? 'num' : '', c.h + (order.col === i ? (order.dir < 0 ? ' \u25bc' : ' \u25b2') : ''));
    th.addEventListener('click', function () {
      order.dir = order.col === i ? -order.dir : (c.num ? -1 : 1);
      order.col = i;
      table(id, cols, rows, empty, order);
    });
    tr.appendChild(th);
  });
  sort();
  rows.slice(0, 500).forEach(function (r) {
    var row = el('tr');
    if (r.attrs) for (var k in r.attrs) row.setAttribute(k, r.attrs[k]);
    cols.forEach(function (c) {
      var td = el('td', c.num ? 'num' : c.cls || '');
      if (c.cell) c.cell(td, r); else td.textContent = c.fmt ? c.fmt(c.key(r)) : c.key(r);
      row.appendChild(td);
    });
    tbody.appendChild(row);
  });
  thead.appendChild(tr);
  t.appendChild(thead);
  t.appendChild(tbody);
  box.appendChild(t);
  if (rows.length > 500) box.appendChild(el('p', 'note', 'The first 500 rows of ' + num(rows.length) + ' in this order.'));
}
function col(h, key, fmt) { return { h: h, num: true, fmt: fmt || num, key: function (r) { return r[key]; } }; }
function siteCell(td, r) {
  td.appendChild(document.createTextNode(r.name));
  var where = r.file ? r.file + (r.line ? ':' + r.line : '') : r.module ? r.module : '';
  if (where) td.appendChild(el('span', 'loc', where));
}
var SITE = { h: 'Site', cls: 'fn', key: function (r) { return r.name; }, cell: siteCell };
