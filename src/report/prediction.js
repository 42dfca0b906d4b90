// mpicast prediction report: the block panel, the zoomable per-rank timeline, and the links
// between the source, the tables and the panel. Reads the JSON in #mpicast-data; builds every
// element with DOM calls and textContent (no HTML from data).
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('mpicast-data').textContent);

  function fmtS(s) {
    var a = Math.abs(s);
    if (!isFinite(s)) return String(s);
    if (a === 0) return '0 s';
    if (a < 1e-6) return (s * 1e9).toFixed(1) + ' ns';
    if (a < 1e-3) return (s * 1e6).toFixed(2) + ' \u00b5s';
    if (a < 1) return (s * 1e3).toFixed(2) + ' ms';
    return s.toFixed(3) + ' s';
  }
  function pct(x) { return (100 * x).toFixed(1) + '%'; }
  function fmtCount(x) {
    if (Number.isInteger(x) && Math.abs(x) < 1e9) return x.toLocaleString('en-US').replace(/,/g, '\u2009');
    if (Math.abs(x) >= 0.01 && Math.abs(x) < 1e6) return x.toFixed(2);
    return x.toExponential(3);
  }
  // el('td', {class: 'r'}, 'text' | node | [children])
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (Array.isArray(kids) ? kids : kids === undefined ? [] : [kids]).forEach(function (k) {
      e.appendChild(typeof k === 'string' || typeof k === 'number' ? document.createTextNode(String(k)) : k);
    });
    return e;
  }
  function short(p) { var s = p.split('/'); return s[s.length - 1] || p; }

  // ---- block panel ---------------------------------------------------------------------------
  var selected = -1;
  var source = document.getElementById('source');
  var panel = document.getElementById('panel-body');

  function blockLines(i) {
    var b = D.blocks[i], out = [];
    for (var n = b.ls; n <= b.le; n++) {
      var e = document.getElementById('f' + b.file + 'l' + n);
      if (e) out.push(e);
    }
    return out;
  }
  function where(b) { return short(D.files[b.file]) + ':' + b.ls + '-' + b.le; }
  function firstPer(b) { for (var k = 0; k < b.per.length; k++) if (b.per[k]) return b.per[k]; return null; }

  function opBar(ops, total) {
    var bar = el('span', { class: 'opbar' });
    ops.forEach(function (o) {
      var w = total > 0 ? 100 * o[1] / total : 0;
      if (w < 0.3) return;
      var info = D.ops[o[0]] || ['#999', ''];
      var i = el('i', { title: o[0] + ' ' + w.toFixed(1) + '%' });
      i.style.width = w.toFixed(2) + '%';
      i.style.background = info[0];
      bar.appendChild(i);
    });
    return bar;
  }

  function selectBlock(i, scrollSource) {
    if (i < 0 || i >= D.blocks.length) return;
    document.querySelectorAll('.ln.sel').forEach(function (e) { e.classList.remove('sel'); });
    document.querySelectorAll('#blocks tr.sel').forEach(function (e) { e.classList.remove('sel'); });
    selected = i;
    var lines = blockLines(i);
    lines.forEach(function (e) { e.classList.add('sel'); });
    var row = document.querySelector('#blocks tr[data-b="' + i + '"]');
    if (row) row.classList.add('sel');
    if (scrollSource && lines.length && source) {
      source.scrollTop = Math.max(0, lines[0].offsetTop - 60);
    }
    renderPanel(i);
  }

  function renderPanel(i) {
    var b = D.blocks[i], p = firstPer(b);
    panel.textContent = '';
    panel.appendChild(el('h3', null, [b.kind + ' block in ', el('code', null, b.fn || '(file scope)')]));
    panel.appendChild(el('div', { class: 'where', title: b.id }, D.files[b.file] + ':' + b.ls + '-' + b.le));
    if (!p) return;
    var stats = el('table');
    [['executions (all ranks)', fmtCount(p.exec)],
     ['predicted compute (all ranks)', fmtS(p.s)],
     ['per execution', p.exec > 0 ? fmtS(p.s / p.exec) : '\u2014'],
     ['share of all compute', pct(p.share)]].forEach(function (r) {
      stats.appendChild(el('tr', null, [el('td', null, r[0]), el('td', { class: 'r' }, r[1])]));
    });
    panel.appendChild(stats);

    panel.appendChild(el('h3', null, 'Predicted time per machine table'));
    var mt = el('table', { id: 'per-machine' });
    mt.appendChild(el('tr', null, [el('th', null, 'machine table'), el('th', { class: 'r' }, 'time'),
      el('th', { class: 'r' }, 'share'), el('th', { class: 'r' }, 'per execution'), el('th', null, 'op classes')]));
    b.per.forEach(function (q, k) {
      if (!q) {
        mt.appendChild(el('tr', null, [el('td', null, D.machines[k]), el('td', { class: 'r', colspan: '4' }, 'not among this prediction\u2019s hottest blocks')]));
        return;
      }
      mt.appendChild(el('tr', null, [el('td', null, D.machines[k]), el('td', { class: 'r' }, fmtS(q.s)),
        el('td', { class: 'r' }, pct(q.share)), el('td', { class: 'r' }, q.exec > 0 ? fmtS(q.s / q.exec) : '\u2014'),
        el('td', null, opBar(q.ops, q.s))]));
    });
    panel.appendChild(mt);

    panel.appendChild(el('h3', null, 'Op-class split' + (D.machines.length > 1 ? ' (' + D.machines[b.per.indexOf(p)] + ')' : '')));
    var total = p.ops.reduce(function (a, o) { return a + o[1]; }, 0);
    panel.appendChild(opBar(p.ops, total));
    var ot = el('table', { id: 'op-split' });
    p.ops.forEach(function (o) {
      var info = D.ops[o[0]] || ['#999', ''];
      var sw = el('i', { class: 'swatch' });
      sw.style.background = info[0];
      ot.appendChild(el('tr', { title: info[1] }, [el('td', null, [sw, o[0]]), el('td', { class: 'r' }, fmtS(o[1])),
        el('td', { class: 'r' }, total > 0 ? pct(o[1] / total) : '\u2014')]));
    });
    panel.appendChild(ot);

    // Blocks that contain this one or that it contains.
    var near = [];
    D.blocks.forEach(function (c, j) {
      if (j === i || c.file !== b.file) return;
      if ((c.ls <= b.ls && c.le >= b.le) || (c.ls >= b.ls && c.le <= b.le)) near.push(j);
    });
    if (near.length) {
      panel.appendChild(el('h3', null, 'Blocks around it'));
      var ul = el('ul');
      near.forEach(function (j) {
        var c = D.blocks[j], q = firstPer(c);
        var a = el('a', { href: '#' }, c.kind + ' ' + where(c));
        a.addEventListener('click', function (e) { e.preventDefault(); selectBlock(j, true); });
        ul.appendChild(el('li', null, [a, ' ' + (q ? fmtS(q.s) + ', ' + pct(q.share) : '')]));
      });
      panel.appendChild(ul);
    }
  }

  if (source) {
    source.addEventListener('click', function (e) {
      var ln = e.target.closest('.ln.b');
      if (ln) selectBlock(+ln.getAttribute('data-b'), false);
    });
  }
  document.querySelectorAll('#blocks tr[data-b]').forEach(function (tr) {
    tr.addEventListener('click', function () { selectBlock(+tr.getAttribute('data-b'), true); });
  });
  document.querySelectorAll('#functions tr[data-line]').forEach(function (tr) {
    tr.addEventListener('click', function (e) {
      e.preventDefault();
      var line = document.getElementById('f' + tr.getAttribute('data-file') + 'l' + tr.getAttribute('data-line'));
      if (!line || !source) return;
      source.scrollTop = Math.max(0, line.offsetTop - 60);
      line.classList.add('flash');
      setTimeout(function () { line.classList.remove('flash'); }, 900);
      if (line.hasAttribute('data-b')) selectBlock(+line.getAttribute('data-b'), false);
    });
  });
  if (D.blocks.length) {
    // The hottest block of the first prediction: the page opens on it.
    var best = 0;
    D.blocks.forEach(function (b, j) {
      var p = firstPer(b), q = firstPer(D.blocks[best]);
      if (p && q && p.s > q.s) best = j;
    });
    selectBlock(best, true);
  }

  // ---- timeline ------------------------------------------------------------------------------
  var T = D.timeline, box = document.getElementById('timeline');
  if (box && T && T.ev.length) timeline(box, T);

  function niceStep(raw) {
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = [1, 2, 5, 10].find(function (k) { return k * mag >= raw; });
    return m * mag;
  }
  function tickLabel(t, step, span) {
    var u = span >= 1 ? [1, 's'] : span >= 1e-3 ? [1e-3, 'ms'] : span >= 1e-6 ? [1e-6, '\u00b5s'] : [1e-9, 'ns'];
    var d = Math.max(0, Math.ceil(-Math.log10(step / u[0]) - 1e-9));
    return (t / u[0]).toFixed(Math.min(d, 6)) + ' ' + u[1];
  }

  function timeline(box, T) {
    var COLORS = { compute: '#3b6fb6', p2p: '#ee8a2a', collective: '#d1495b' };
    var LABEL_W = 122, SUM_W = 150, AXIS_H = 24, PAD = 10;
    var css = getComputedStyle(document.documentElement);
    var WAIT = css.getPropertyValue('--wt').trim() || '#e8c547';
    var tick = T.tick_s, end = T.end_s > 0 ? T.end_s : 1e-9;
    // Rows: every rank the statistics or the events name, ascending.
    var stats = {};
    T.ranks.forEach(function (r) { stats[r.rank] = r; });
    var rankSet = {};
    T.ranks.forEach(function (r) { rankSet[r.rank] = true; });
    for (var k = 0; k < T.ev.length; k += 4) rankSet[T.ev[k]] = true;
    var ranks = Object.keys(rankSet).map(Number).sort(function (a, b) { return a - b; });
    var rowOf = {};
    ranks.forEach(function (r, i) { rowOf[r] = i; });
    var n = ranks.map(function () { return 0; });
    for (k = 0; k < T.ev.length; k += 4) n[rowOf[T.ev[k]]]++;
    var rows = ranks.map(function (r, i) {
      return { rank: r, s: new Float64Array(n[i]), e: new Float64Array(n[i]), k: new Uint16Array(n[i]), n: 0 };
    });
    for (k = 0; k < T.ev.length; k += 4) {
      var row = rows[rowOf[T.ev[k]]];
      row.s[row.n] = T.ev[k + 2] * tick;
      row.e[row.n] = T.ev[k + 3] * tick;
      row.k[row.n] = T.ev[k + 1];
      row.n++;
    }
    // Events of a rank follow each other, so their ends ascend too: a binary search finds the
    // first one ending after a time.
    function firstEnding(row, t) {
      var lo = 0, hi = row.n;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (row.e[mid] < t) lo = mid + 1; else hi = mid; }
      return lo;
    }
    var rowH = ranks.length <= 16 ? 22 : ranks.length <= 48 ? 12 : Math.max(3, Math.floor(640 / ranks.length));
    var canvas = el('canvas', { id: 'timeline-canvas', role: 'img', 'aria-label': 'per-rank timeline' });
    var tip = el('div', { class: 'tip' });
    tip.hidden = true;
    box.appendChild(canvas);
    box.appendChild(tip);
    var full = [0, end * 1.02], v0 = full[0], v1 = full[1];
    var W = 0, H = AXIS_H + ranks.length * rowH + 8;
    function plotW() { return Math.max(50, W - LABEL_W - SUM_W - PAD); }
    function X(t) { return LABEL_W + (t - v0) / (v1 - v0) * plotW(); }
    function tAt(x) { return v0 + (x - LABEL_W) / plotW() * (v1 - v0); }

    function draw() {
      W = box.clientWidth || 1000;
      var dpr = window.devicePixelRatio || 1;
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
      canvas.style.height = H + 'px';
      var g = canvas.getContext('2d');
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.clearRect(0, 0, W, H);
      g.font = '11px Helvetica, Arial, sans-serif';
      var pw = plotW(), right = LABEL_W + pw;
      // Axis and grid.
      var step = niceStep((v1 - v0) / Math.max(2, pw / 95));
      g.fillStyle = '#374151';
      g.strokeStyle = '#e5e7eb';
      g.textAlign = 'center';
      for (var t = Math.ceil(v0 / step) * step; t <= v1 + step * 1e-9; t += step) {
        var x = Math.round(X(t)) + 0.5;
        g.beginPath(); g.moveTo(x, AXIS_H - 5); g.lineTo(x, H - 6); g.stroke();
        var label = tickLabel(t, step, v1 - v0);
        // Labels stay clear of the right-hand column's title.
        if (x + g.measureText(label).width / 2 <= right + PAD / 2) g.fillText(label, x, AXIS_H - 9);
      }
      // Rows.
      var drawn = 0;
      rows.forEach(function (row, i) {
        var y = AXIS_H + i * rowH, h = Math.max(1, rowH - (rowH > 6 ? 3 : 1));
        if (i % 2 === 0) { g.fillStyle = '#f8f9fb'; g.fillRect(LABEL_W, y, pw, rowH); }
        var st = stats[row.rank];
        // After the rank finished: idle until the last one does.
        if (st) {
          var fx = Math.max(LABEL_W, X(st.finish)), ex = Math.min(right, X(end));
          if (ex > fx) { g.fillStyle = '#e3e3e3'; g.fillRect(fx, y + 1, ex - fx, h); }
        }
        g.save();
        g.beginPath(); g.rect(LABEL_W, y, pw, rowH); g.clip();
        var last = '';
        for (var j = firstEnding(row, v0); j < row.n && row.s[j] <= v1; j++) {
          var c = COLORS[T.cats[row.k[j]]] || '#888';
          if (c !== last) { g.fillStyle = c; last = c; }
          var x0 = X(row.s[j]), x1 = X(row.e[j]);
          g.fillRect(x0, y + 1, Math.max(0.6, x1 - x0), h);
          drawn++;
        }
        g.restore();
        if (rowH >= 9) {
          g.fillStyle = '#1d232b';
          g.textAlign = 'right';
          var label = 'rank ' + row.rank + (st && rowH >= 14 ? '  ' + st.host : '');
          g.fillText(label, LABEL_W - 6, y + rowH / 2 + 4);
        }
        // The rank's split from the replay statistics: compute, communication, waiting.
        if (st) {
          var sx = right + PAD, sw = SUM_W - PAD, a = 0;
          [[st.compute, COLORS.compute], [st.comm, COLORS.p2p], [st.wait, WAIT]].forEach(function (part) {
            var w = sw * part[0] / end;
            g.fillStyle = part[1];
            g.fillRect(sx + a, y + 1, Math.max(0, w), h);
            a += w;
          });
        }
      });
      // Where the page's events stop, when it holds only the earliest ones.
      if (T.cut_s !== null && T.cut_s !== undefined && T.cut_s >= v0 && T.cut_s <= v1) {
        g.strokeStyle = '#b91c1c';
        g.setLineDash([4, 3]);
        g.beginPath(); g.moveTo(X(T.cut_s), AXIS_H); g.lineTo(X(T.cut_s), H - 6); g.stroke();
        g.setLineDash([]);
      }
      g.strokeStyle = '#9aa1ab';
      g.strokeRect(LABEL_W + 0.5, AXIS_H - 0.5, pw, ranks.length * rowH + 1);
      g.fillStyle = '#374151';
      g.textAlign = 'left';
      g.fillText('compute / comm / wait', right + PAD, AXIS_H - 9);
      canvas.setAttribute('data-drawn', String(drawn));
      canvas.setAttribute('data-view', v0 + ' ' + v1);
      var range = document.getElementById('tl-range');
      if (range) range.textContent = 'showing ' + fmtS(Math.max(0, v0)) + ' \u2013 ' + fmtS(v1) + ' (the run: ' + fmtS(end) + ')';
    }

    function setView(a, b) {
      var span = Math.max(b - a, 1e-9), fspan = full[1] - full[0];
      if (span >= fspan) { a = full[0]; b = full[1]; } else {
        if (a < full[0]) { a = full[0]; b = a + span; }
        if (b > full[1]) { b = full[1]; a = b - span; }
      }
      v0 = a; v1 = b;
      draw();
    }
    function zoomAt(t, factor) { setView(t - (t - v0) * factor, t + (v1 - t) * factor); }

    canvas.addEventListener('wheel', function (e) {
      e.preventDefault();
      var r = canvas.getBoundingClientRect(), x = e.clientX - r.left;
      var t = x < LABEL_W || x > LABEL_W + plotW() ? (v0 + v1) / 2 : tAt(x);
      zoomAt(t, Math.exp(e.deltaY * 0.0015));
    }, { passive: false });
    var drag = null;
    canvas.addEventListener('mousedown', function (e) {
      drag = { x: e.clientX, v0: v0, v1: v1 };
      canvas.classList.add('dragging');
    });
    window.addEventListener('mouseup', function () { drag = null; canvas.classList.remove('dragging'); });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var dt = (e.clientX - drag.x) / plotW() * (drag.v1 - drag.v0);
      setView(drag.v0 - dt, drag.v1 - dt);
    });
    canvas.addEventListener('dblclick', function () { setView(full[0], full[1]); });
    canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
    canvas.addEventListener('mousemove', function (e) {
      if (drag) { tip.hidden = true; return; }
      var r = canvas.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
      var i = Math.floor((y - AXIS_H) / rowH);
      if (i < 0 || i >= rows.length) { tip.hidden = true; return; }
      var row = rows[i], st = stats[row.rank], text = null;
      if (x > LABEL_W + plotW()) {
        if (st) text = 'rank ' + row.rank + ': compute ' + fmtS(st.compute) + ', communication ' + fmtS(st.comm) + ', waiting ' + fmtS(st.wait);
      } else if (x >= LABEL_W) {
        var t = tAt(x), slack = 3 / plotW() * (v1 - v0);
        var j = firstEnding(row, t - slack);
        if (j < row.n && row.s[j] <= t + slack) {
          text = 'rank ' + row.rank + ' \u00b7 ' + T.kinds[row.k[j]] + ' \u00b7 ' + fmtS(row.s[j]) + ' \u2192 ' + fmtS(row.e[j]) + ' (' + fmtS(row.e[j] - row.s[j]) + ')';
        } else if (st && t >= st.finish) {
          text = 'rank ' + row.rank + ' finished at ' + fmtS(st.finish);
        }
      } else if (st) {
        text = 'rank ' + row.rank + ' on ' + st.host + ', finishes at ' + fmtS(st.finish);
      }
      if (!text) { tip.hidden = true; return; }
      tip.textContent = text;
      tip.hidden = false;
      var left = x + 14;
      if (left + tip.offsetWidth > W) left = Math.max(0, x - tip.offsetWidth - 10);
      tip.style.left = left + 'px';
      tip.style.top = (y + 14) + 'px';
    });
    document.querySelectorAll('.tl-controls button').forEach(function (b) {
      b.addEventListener('click', function () {
        var z = b.getAttribute('data-zoom'), mid = (v0 + v1) / 2;
        if (z === 'in') zoomAt(mid, 0.5); else if (z === 'out') zoomAt(mid, 2); else setView(full[0], full[1]);
      });
    });
    window.addEventListener('resize', draw);
    // A link can open on a time window: report.html#view=START,END (seconds).
    var m = /(?:^#|&)view=([^,&]+),([^&]+)/.exec(location.hash);
    if (m && isFinite(+m[1]) && isFinite(+m[2]) && +m[2] > +m[1]) setView(+m[1], +m[2]); else draw();

    var legend = document.getElementById('tl-legend');
    if (legend) {
      var present = {};
      T.cats.forEach(function (c) { present[c] = true; });
      var items = [['compute', COLORS.compute, 'compute'], ['p2p', COLORS.p2p, 'point-to-point MPI (data moving or waiting for the partner)'],
        ['collective', COLORS.collective, 'collective MPI']];
      items.forEach(function (it) {
        if (!present[it[0]]) return;
        var sw = el('i');
        sw.style.background = it[1];
        legend.appendChild(el('span', null, [sw, it[2]]));
      });
      var idle = el('i', { class: 'idle' });
      legend.appendChild(el('span', null, [idle, 'finished, until the last rank does']));
      var w = el('i');
      w.style.background = WAIT;
      legend.appendChild(el('span', null, [w, 'waiting (right-hand bars: each rank\u2019s compute / communication / waiting)']));
    }
  }

  document.documentElement.setAttribute('data-ready', '1');
})();
