// Tell require.js that the ipywidgets modules bundled in embed-amd.js live in
// _static/widgets/ (next to this file), not under the page's own folder: the
// bundles locate the Font Awesome fonts of widget icons relative to their own
// module address, so the fonts are then fetched from _static/widgets/ too.
(function () {
  var widgets = document.currentScript.src.replace(/[^/]*$/, "widgets");
  window.require.config({
    paths: { "@jupyter-widgets": widgets, "@jupyter-widgets/html-manager/dist": widgets },
  });
})();
