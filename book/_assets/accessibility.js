/* GRPO Companion: what an accessibility audit (axe-core, WCAG 2.1 A and AA; tests/site/test_site.py) finds in the
 * markup of the theme and of the ipywidgets snapshots, on every page, fixed where the page is drawn.
 *
 * - The sidebar's <summary> toggles hold only an icon (pydata-sphinx-theme 0.17 builds them so; axe "summary-name",
 *   as pytorch/pytorch_sphinx_theme#234 reports of the same markup): each is named after the page it opens.
 * - The search button's name "Search" leaves out what it shows, "Search Ctrl+K" (axe
 *   "label-content-name-mismatch"; the shortcut is the theme's, pydata/pydata-sphinx-theme#1499): its name is
 *   what it shows.
 * - The colour-mode button's icons carry titles ("Light", "Dark", "System Settings") that are not part of its
 *   name "Color mode" (same rule): the icons lose their titles (the button's tooltip names it) and are hidden
 *   from assistive technology, and the name says the mode.
 * - The ipywidgets sliders of a widget snapshot are noUiSlider handles without a name (axe
 *   "aria-input-field-name"; leongersen/noUiSlider#1019, #1223): each takes its widget's label. The snapshot is
 *   drawn after the page loads, so this runs again whenever the article changes.
 * - The theme's page header and footer are empty on this site (nothing is configured in them), yet a screen reader
 *   announced them as a banner and a contentinfo landmark with nothing inside: an empty one is no landmark.
 * - A card's title (sphinx-design's grid-item-card, the landing page's "Read", ...) is a bold <div> that looks like a
 *   heading: it becomes one, a level below the heading of the section that holds it (WCAG 1.3.1).
 * - A widget snapshot has no kernel (ipywidgets draws it "disconnected"): its buttons, sliders and fields do
 *   nothing, yet said they worked. Each says it is unavailable (aria-disabled) and leaves the Tab order; its text,
 *   values and charts stay readable. Drawn after the page loads, like the sliders' names.
 * - A figure keeps the size it was drawn at, where its smallest text is 9 px or more (companion.css): on a column
 *   narrower than the figure (a phone) it scrolls sideways inside a box of its own, which then takes keyboard focus
 *   and a name, so that a keyboard user can scroll it too (WCAG 2.1.1; axe "scrollable-region-focusable").
 * - The launch buttons (Binder, Colab) show a logo beside their name, with the alt text "Binder logo": a screen
 *   reader said "Binder logo Binder" (sphinx-book-theme 1.1's render_inner_html). Beside the name the logo is
 *   decorative (WCAG technique H2): its alt text is empty, as the site's own logo's is (_config.yml).
 * - A folded code cell's toggle (myst-nb's hide-cell) is named "Toggle hidden content" while it shows "Show code cell
 *   content" (axe "label-content-name-mismatch"): its name is what it shows.
 * Classic script, loaded by every page (html_js_files in _config.yml).
 */
(function () {
  "use strict";

  function nameSidebarToggles() {
    document.querySelectorAll(".bd-sidebar-primary li > details > summary:not([aria-label])").forEach((summary) => {
      const link = summary.closest("li").querySelector(":scope > a");
      summary.setAttribute("aria-label", `Sections of ${link ? link.textContent.trim() : "this page"}`);
    });
  }

  function nameThemeButtons() {
    document.querySelectorAll(".search-button-field[aria-label]").forEach((button) => button.removeAttribute("aria-label"));
    document.querySelectorAll("details.hide > summary[aria-label]").forEach((toggle) => toggle.removeAttribute("aria-label"));
    const mode = document.documentElement.dataset.mode || "auto";
    const shown = { light: "light", dark: "dark", auto: "as the system is set" }[mode] || mode;
    document.querySelectorAll(".theme-switch-button").forEach((button) => {
      // Font Awesome turns each <i title> into an <svg> with a <title>, which axe counts as the button's text
      button.querySelectorAll("i, svg").forEach((icon) => {
        icon.removeAttribute("title");
        icon.removeAttribute("aria-labelledby");
        icon.setAttribute("aria-hidden", "true");
        icon.querySelectorAll("title").forEach((title) => title.remove());
      });
      button.setAttribute("aria-label", `Color mode: ${shown}`);
    });
  }

  function nameSliders(root) {
    root.querySelectorAll(".widget-slider [role='slider']:not([aria-label])").forEach((handle) => {
      const label = handle.closest(".widget-slider").querySelector(".widget-label");
      const text = label ? label.textContent.trim() : "";
      if (text) handle.setAttribute("aria-label", text);
    });
  }

  function unmarkEmptyLandmarks() {
    document.querySelectorAll("body header, body footer").forEach((landmark) => {
      if (!landmark.children.length && !landmark.textContent.trim()) landmark.setAttribute("role", "none");
    });
  }

  function cardTitlesAsHeadings() {
    document.querySelectorAll(".bd-article section .sd-card-title:not([role])").forEach((title) => {
      const heading = title.closest("section").querySelector(":scope > :is(h1, h2, h3, h4, h5)");
      title.setAttribute("role", "heading");
      title.setAttribute("aria-level", String(heading ? Number(heading.tagName[1]) + 1 : 2));
    });
  }

  const SNAPSHOT_CONTROLS = ".jupyter-widgets-disconnected :is(button, input, select, textarea, [role='slider'])";

  function disableSnapshotControls(root) {
    root.querySelectorAll(`${SNAPSHOT_CONTROLS}:not([aria-disabled])`).forEach((control) => {
      control.setAttribute("aria-disabled", "true");
      control.tabIndex = -1;
    });
  }

  const FIGURE_NAME = "Figure wider than the screen: scroll sideways to see all of it";
  const figureBoxes = new ResizeObserver((entries) => {
    entries.forEach(({ target: box }) => {
      if (box.scrollWidth > box.clientWidth) {
        box.tabIndex = 0;
        box.setAttribute("role", "group");
        box.setAttribute("aria-label", FIGURE_NAME);
      } else {
        ["tabindex", "role", "aria-label"].forEach((attribute) => box.removeAttribute(attribute));
      }
    });
  });

  function boxFigures() {
    document.querySelectorAll(".bd-article .cell_output > img, .bd-article figure img").forEach((img) => {
      const box = document.createElement("div");
      box.className = "grpo-figure-box";
      img.replaceWith(box);
      box.append(img);
      figureBoxes.observe(box);
    });
  }

  function quietButtonLogos() {
    document.querySelectorAll("a .btn__icon-container img").forEach((img) => {
      if (img.closest("a").textContent.trim()) img.alt = "";
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    boxFigures();
    quietButtonLogos();
    nameSidebarToggles();
    nameThemeButtons();
    unmarkEmptyLandmarks();
    cardTitlesAsHeadings();
    nameSliders(document);
    disableSnapshotControls(document);
    // the theme's toggle changes data-mode on <html>; the widget snapshots are drawn into the article later
    new MutationObserver(nameThemeButtons).observe(document.documentElement, { attributeFilter: ["data-mode"] });
    const main = document.getElementById("main-content") || document.body;
    new MutationObserver(() => {
      nameSliders(main);
      disableSnapshotControls(main);
    }).observe(main, { childList: true, subtree: true });
  });
})();
