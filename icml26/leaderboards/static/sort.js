/* Sortable tables for the icml26 leaderboard: plain JavaScript, no dependencies.
 * Every <table class="sortable"> gets a button in each header cell; clicking sorts the body
 * rows by that column (numbers numerically, using a cell's data-sort attribute when present),
 * ascending first, again for descending. The header's aria-sort attribute shows the state. */
(function () {
  "use strict";

  function cellValue(row, idx) {
    var cell = row.cells[idx];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-sort");
    return v === null ? cell.textContent.trim() : v;
  }

  function asNumber(s) {
    if (s === "" || s === null) { return null; }
    var x = Number(s);
    return isNaN(x) ? null : x;
  }

  function compare(a, b) {
    var x = asNumber(a), y = asNumber(b);
    if (x !== null && y !== null) { return x - y; }
    if (x !== null) { return -1; }
    if (y !== null) { return 1; }
    return a.localeCompare(b);
  }

  function sortTable(table, idx, th) {
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    rows.sort(function (r1, r2) {
      var c = compare(cellValue(r1, idx), cellValue(r2, idx));
      return ascending ? c : -c;
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    rows.forEach(function (r) { tbody.appendChild(r); });
  }

  function init() {
    var tables = document.querySelectorAll("table.sortable");
    Array.prototype.forEach.call(tables, function (table) {
      if (!table.tHead || !table.tBodies.length) { return; }
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, idx) {
        if (th.classList.contains("nosort")) { return; }
        var button = document.createElement("button");
        button.type = "button";
        button.className = "sort";
        button.title = "sort by this column";
        while (th.firstChild) { button.appendChild(th.firstChild); }
        th.appendChild(button);
        button.addEventListener("click", function () { sortTable(table, idx, th); });
      });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
