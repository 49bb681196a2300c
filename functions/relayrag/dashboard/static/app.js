// The dashboard's own script (served from /static, allowed by the CSP's script-src 'self'; no inline script).
// Upload form: shows how much of the request's bytes have reached the server while the browser sends the
// files (htmx's xhr progress events), then hands over to the server's per-file ingest lines (SSE).
(function () {
  "use strict";
  function mb(n) { return (n / 1048576).toFixed(n < 10485760 ? 2 : 1); }
  function box(form) { return form && form.id === "upload-form" ? document.getElementById("upload-bytes") : null; }
  document.addEventListener("htmx:beforeRequest", function (ev) {
    var form = ev.detail.elt, out = box(form);
    if (!out) return;
    var input = form.querySelector("input[type=file]");
    var n = input && input.files ? input.files.length : 0;
    out.hidden = false;
    out.dataset.state = "sending";
    out.querySelector("progress").value = 0;
    out.querySelector(".what").textContent = "sending " + n + " file" + (n === 1 ? "" : "s") + "…";
  });
  document.addEventListener("htmx:xhr:progress", function (ev) {
    var out = box(ev.detail.elt || ev.target);
    if (!out || !ev.detail.lengthComputable) return;
    var bar = out.querySelector("progress");
    bar.max = ev.detail.total;
    bar.value = ev.detail.loaded;
    out.querySelector(".what").textContent = "sent " + mb(ev.detail.loaded) + " of " + mb(ev.detail.total) + " MB";
  });
  document.addEventListener("htmx:afterRequest", function (ev) {
    var form = ev.detail.elt, out = box(form);
    if (!out) return;
    out.dataset.state = ev.detail.successful ? "sent" : "failed";
    out.querySelector(".what").textContent = ev.detail.successful
      ? "sent; the server now ingests each file (below)" : "the upload did not reach the server";
    if (ev.detail.successful) form.reset();
  });
})();

// Evaluation page: choosing a collection picks a stored set that fits it (an answers set for documents, a SQL set
// for a warehouse; BEIR last) when the chosen one does not, and the choice goes into the address (replaceState),
// so a reload, or coming back after another page, shows it again (the server selects what the query names).
(function () {
  "use strict";
  function fits(kind, col) {
    if (kind === "sql") return col.dataset.warehouse === "1";
    if (kind === "answers") return col.dataset.docs === "1";
    return true;
  }
  function remember(ds, cols) {
    var q = new URLSearchParams(window.location.search);
    q.set("dataset", ds.value);
    q.set("collection", cols.value);
    window.history.replaceState(window.history.state, "", window.location.pathname + "?" + q.toString());
  }
  function setup() {
    var ds = document.getElementById("dataset"), cols = document.getElementById("eval-collection");
    if (!ds || !cols || ds.dataset.wired) return;
    ds.dataset.wired = "1";
    cols.addEventListener("change", function () {
      var col = cols.options[cols.selectedIndex];
      var current = ds.options[ds.selectedIndex];
      if (col && current && !fits(current.dataset.kind, col)) {
        var best = null;
        for (var i = 0; i < ds.options.length; i++) {
          var o = ds.options[i];
          if (!fits(o.dataset.kind, col)) continue;
          if (best === null || (best.dataset.kind === "beir" && o.dataset.kind !== "beir")) best = o;
        }
        if (best) ds.value = best.value;
      }
      remember(ds, cols);
    });
    ds.addEventListener("change", function () { remember(ds, cols); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup); else setup();
})();
