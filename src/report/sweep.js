// mpicast sweep report: links the table's rows and the plot's points (hovering one highlights
// the other), and records that the figure laid out (data-plot-width on <html>).
(function () {
  'use strict';
  var svg = document.querySelector('#plot svg');
  function points(series, ranks) {
    return document.querySelectorAll('#plot g.series[data-series="' + series + '"] circle.pt[data-ranks="' + ranks + '"]');
  }
  function mark(series, ranks, on) {
    points(series, ranks).forEach(function (c) { c.classList.toggle('hl', on); });
    document.querySelectorAll('#points tr[data-series="' + series + '"][data-ranks="' + ranks + '"]').forEach(function (tr) {
      tr.classList.toggle('sel', on);
    });
  }
  document.querySelectorAll('#points tr[data-series]').forEach(function (tr) {
    var s = tr.getAttribute('data-series'), r = tr.getAttribute('data-ranks');
    tr.addEventListener('mouseenter', function () { mark(s, r, true); });
    tr.addEventListener('mouseleave', function () { mark(s, r, false); });
  });
  document.querySelectorAll('#plot g.series').forEach(function (g) {
    var s = g.getAttribute('data-series');
    g.querySelectorAll('circle.pt').forEach(function (c) {
      var r = c.getAttribute('data-ranks');
      c.addEventListener('mouseenter', function () { mark(s, r, true); });
      c.addEventListener('mouseleave', function () { mark(s, r, false); });
    });
  });
  if (svg) {
    var box = svg.getBBox();
    document.documentElement.setAttribute('data-plot-width', String(Math.round(box.width)));
    document.documentElement.setAttribute('data-plot-points', String(svg.querySelectorAll('circle.pt').length));
  }
  document.documentElement.setAttribute('data-ready', '1');
})();
