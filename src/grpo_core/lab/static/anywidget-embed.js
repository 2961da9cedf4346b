/* GRPO Companion: the "anywidget" module for the ipywidgets embed manager of the book.
 *
 * The book shows each notebook's saved widget state with @jupyter-widgets/html-manager
 * (embed-amd.js), which loads a widget's front end as an AMD module by name. The §11
 * lab's views are an anywidget (grpo_core.lab.view.LabView) whose front end travels
 * in its own state (`_esm`, `_css`), so this module only has to run it: it imports
 * `_esm` from a blob: URL and calls its render({model, el}), exactly as anywidget's
 * JupyterLab extension does, with a read-only model (a saved state has no kernel).
 * Nothing is fetched from a network. The §11 page maps the name "anywidget" to this
 * file with require.config before the embed manager starts.
 */
define(["@jupyter-widgets/base"], function (base) {
  "use strict";
  const loaded = new Map();

  function load(esm) {
    if (!loaded.has(esm)) {
      const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
      loaded.set(esm, import(url));
    }
    return loaded.get(esm);
  }

  class AnyModel extends base.DOMWidgetModel {}

  class AnyView extends base.DOMWidgetView {
    render() {
      const model = this.model;
      const css = model.get("_css");
      const id = `anywidget-css-${model.get("_anywidget_id") || model.model_id}`;
      if (css && !document.getElementById(id)) {
        const style = document.createElement("style");
        style.id = id;
        style.textContent = css;
        document.head.append(style);
      }
      const readOnly = {
        get: (name) => model.get(name),
        set: () => {},
        save_changes: () => {},
        send: () => {},
        on: (event, callback) => model.on(event, callback),
        off: (event, callback) => model.off(event, callback),
      };
      return load(model.get("_esm")).then((module) => module.default.render({ model: readOnly, el: this.el }));
    }
  }

  return { AnyModel, AnyView };
});
