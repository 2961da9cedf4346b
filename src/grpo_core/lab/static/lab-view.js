/* GRPO Companion, the §11 bandit lab: every view, drawn from one state object.
 *
 * One module for both labs: in JupyterLab it is the front end of the
 * anywidget grpo_core.lab.view.LabView, on the site it is driven by lab-site.js;
 * either way its state is the one controller's (lab-controller.js), which also
 * writes every number (fixed) and the replay line. A click becomes one state, and update() redraws the views from it in
 * one synchronous pass, hence in one frame. The DOM is written only where the
 * state changed: a slot whose markup is unchanged is skipped, and one that
 * changed is patched in place (an attribute, a text, an element added or
 * removed), so a ledger row, a chart's frame or the group table's head stays
 * the node it was (tests/site/test_lab_site.py checks every redraw of a session).
 * Every slot keeps its size (the chips, the progress bar; the no-signal banner
 * reserves the height of its longest text: lab.css), so nothing moves when a
 * view changes. The view computes no formula of
 * the chapter; it formats. Which cards and curve panels it draws comes from
 * the lab's one definition, grpo_core.lab.spec (mount's second argument).
 *
 * State: {engine, names, rewards, best, probs, ref_probs, config, seed,
 * steps, group: null | {actions, rewards, advantages, ratios, clipped, eps},
 * stats: {mean, std, clip, kl, entropy, p_best, steps}, curves: {key: [xs, ys]},
 * ledger: [[number, text], ...] oldest first, progress: [done, total],
 * session: [[verb, argument], ...], printed as the Python that replays it}
 * (lab-controller.js). Classic script: defines globalThis.GRPOLab.view.
 */
(function (root) {
  "use strict";

  // the one formatter and the replay line are the controller's (lab-controller.js)
  const { fixed, fmt, signed, g, phrase, ledgerText, replay } = root.GRPOLab.controller;
  // the lab's own colours (grpo_core.lab.spec.PALETTE, written as CSS variables by palette()) and the theme's muted
  const COLORS = new Proxy({}, { get: (_, name) => `var(--grpo-${name})` });

  /** The palette of the spec as CSS custom properties, light and, under the book's and JupyterLab's dark themes,
   * dark: one stylesheet per page (lab.css and the views read the variables). */
  function palette(spec) {
    if (document.getElementById("grpo-lab-palette")) return;
    const block = (selector, k) =>
      `${selector} {${Object.entries(spec.palette).map(([name, pair]) => ` --grpo-${name}: ${pair[k]};`).join("")} }`;
    const style = document.createElement("style");
    style.id = "grpo-lab-palette";
    style.textContent = [
      block(".grpo-lab", 0),
      block('html[data-theme="dark"] .grpo-lab, body[data-jp-theme-light="false"] .grpo-lab', 1),
    ].join("\n");
    document.head.append(style);
  }

  const escape = (text) =>
    String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const tone = (a) => (a > 0 ? "grpo-pos" : a < 0 ? "grpo-neg" : "grpo-zero");
  // the title of one of the views: a heading below the lab's own (WCAG 1.3.1)
  const viewTitle = (text) => `<div class="grpo-group-title" role="heading" aria-level="4">${text}</div>`;

  /** The answers with their probabilities under ``probs``, as the charts' names and the summary say them. */
  const probsText = (state, probs) => state.names.map((name, k) => `${name} ${fmt(probs[k], 2)}`).join(", ");

  function policySvg(state) {
    const width = 360, height = 196, left = 34, right = 8, top = 22, bottom = 44;
    const plotW = width - left - right, plotH = height - top - bottom;
    const slot = plotW / state.names.length;
    const y = (p) => top + plotH * (1 - p);
    const name =
      `Policy π over the answers: ${probsText(state, state.probs)}. ` +
      `Reference π_ref: ${probsText(state, state.ref_probs)}.`;
    const parts = [
      `<svg class="grpo-svg" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escape(name)}">`,
      `<rect x="${width - 150}" y="4" width="10" height="10" fill="${COLORS.blue}"/>`,
      `<text x="${width - 136}" y="13" class="grpo-small">π_θ</text>`,
      `<rect x="${width - 98}" y="4" width="10" height="10" fill="${COLORS.ref}" stroke="${COLORS.grey}"/>`,
      `<text x="${width - 84}" y="13" class="grpo-small">π_ref (reset)</text>`,
    ];
    for (const tick of [0, 0.5, 1]) {
      parts.push(
        `<line x1="${left}" x2="${width - right}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}" class="grpo-grid"/>`,
        `<text x="${left - 5}" y="${(y(tick) + 3).toFixed(1)}" text-anchor="end" class="grpo-small">${fixed(tick, 1)}</text>`,
      );
    }
    state.names.forEach((name, k) => {
      const cx = left + slot * (k + 0.5);
      const p = state.probs[k], q = state.ref_probs[k];
      parts.push(
        `<rect class="grpo-bar" x="${(cx - 17).toFixed(1)}" y="${y(p).toFixed(1)}" width="22" height="${(plotH * p).toFixed(1)}" fill="${COLORS.blue}" rx="2"/>`,
        `<rect x="${(cx + 7).toFixed(1)}" y="${y(q).toFixed(1)}" width="11" height="${(plotH * q).toFixed(1)}" fill="${COLORS.ref}" stroke="${COLORS.grey}" rx="1"/>`,
        `<text x="${(cx - 6).toFixed(1)}" y="${(y(p) - 4).toFixed(1)}" text-anchor="middle" class="grpo-value">${fixed(p, 2)}</text>`,
        `<text x="${cx.toFixed(1)}" y="${top + plotH + 16}" text-anchor="middle" class="grpo-action${k === state.best ? " grpo-best" : ""}">${escape(name)}</text>`,
        `<text x="${cx.toFixed(1)}" y="${top + plotH + 31}" text-anchor="middle" class="grpo-small">r = ${g(state.rewards[k])}</text>`,
      );
    });
    parts.push("</svg>");
    return parts.join("");
  }

  function groupHtml(state) {
    const group = state.group;
    const names = state.names;
    let title, chips = "";
    const rows = [];
    if (group === null) {
      title = "No group yet: press <b>Sample group</b> or <b>GRPO step</b>.";
      names.forEach((name) => rows.push(`<tr class="grpo-absent"><td>${escape(name)}</td><td>—</td><td>—</td><td>—</td><td>—</td><td>—</td></tr>`));
    } else {
      const stepped = group.ratios !== null;
      title = `Group of G = ${group.actions.length} · ${stepped ? "used by the last GRPO step" : "sampled, not yet used"}`;
      chips = group.actions
        .map((o, i) => {
          const a = group.advantages[i];
          return `<span class="grpo-chip ${tone(a)}" title="o${i + 1} = ${escape(names[o])}, R = ${g(group.rewards[i])}, Â = ${signed(a)}">${escape(names[o])}</span>`;
        })
        .join("");
      names.forEach((name, k) => {
        const where = group.actions.flatMap((a, i) => (a === k ? [i] : []));
        if (where.length === 0) {
          rows.push(`<tr class="grpo-absent"><td>${escape(name)}</td><td>0</td><td colspan="4">not sampled</td></tr>`);
          return;
        }
        const i = where[0];
        const adv = group.advantages[i];
        let ratio = "—", clip = "—";
        if (stepped) {
          ratio = fixed(group.ratios[i], 2);
          clip = group.clipped[i] ? (adv > 0 ? "yes: r &gt; 1+ε" : "yes: r &lt; 1−ε") : "no";
        }
        rows.push(
          `<tr><td>${escape(name)}</td><td>${where.length}</td><td>${g(group.rewards[i])}</td>` +
            `<td class="${tone(adv)}">${signed(adv)}</td><td>${ratio}</td><td>${clip}</td></tr>`,
        );
      });
    }
    const eps = group && group.eps !== null && group.eps !== undefined ? group.eps : state.config.eps_low;
    return (
      `${viewTitle(title)}<div class="grpo-chips">${chips}</div>` +
      '<table class="grpo-table"><thead><tr><th>o</th><th>n</th><th>R</th><th>Â</th>' +
      `<th>r = π/π<sub>old</sub></th><th>clipped (ε = ${fixed(eps, 2)})</th></tr></thead>` +
      `<tbody>${rows.join("")}</tbody></table>`
    );
  }

  /** The banner's sentence on a large k3 weight π_ref/π of the group (β > 0, grpo_core.lab.spec.K3_WEIGHT_LARGE). */
  function k3Words(state, spec, beta) {
    const group = state.group;
    if (!(beta > 0) || group.k3_weight < spec.k3_weight_large) return "";
    const name = escape(state.names[group.k3_answer]);
    const weight = group.k3_weight < spec.k3_weight_shown ? `is ${fixed(group.k3_weight, 1)}` : "is above 10^6";
    return ` The k3 weight π_ref/π of ${name} ${weight}, unbounded as π(${name}) → 0.`;
  }

  /** The banner: whether the group carries signal and, for one with none, what acts on π and, once a step used
   * it, what that step did, measured (group.outcome, the controller's klOutcome). */
  function warningHtml(state, spec) {
    const group = state.group;
    // The signal line is a <p>, the warning a <div>: a redraw replaces one by the other whole. Patched into each
    // other, the Â<sub>i</sub> both contain moved to its new place, a layout shift on each change in JupyterLab.
    if (group === null) return '<p class="grpo-signal">No group on screen.</p>';
    const stepped = group.ratios !== null;
    const beta = stepped ? group.beta : state.config.beta;
    const k3 = k3Words(state, spec, beta);
    const rewards = group.rewards;
    if (Math.max(...rewards) !== Math.min(...rewards)) {
      return `<p class="grpo-signal">This group carries signal: std(R) = ${fmt(state.stats.std)}, so the Â<sub>i</sub> are not all 0 (eq. 3).${k3}</p>`;
    }
    const only = `only the KL term (β = ${fixed(beta, 3)})`;
    const [before, after] = [fmt(group.kl_before), fmt(state.stats.kl)];
    const consequence = !stepped
      ? beta > 0
        ? `${only} will act on π.`
        : "with β = 0 nothing acts on π: a GRPO step on it leaves π where it is."
      : {
          still: beta > 0 ? `${only} acted, and π did not move.` : "with β = 0 nothing acted on π: it did not move.",
          toward: `${only} moved π, back toward π_ref: KL(π‖π_ref) ${before} → ${after}.`,
          away: `${only} moved π, and it overshot: KL(π‖π_ref) ${before} → ${after}, away from π_ref.`,
          stays: `${only} moved π, and KL(π‖π_ref) stays at ${after}.`,
        }[group.outcome];
    return (
      '<div class="grpo-warning"><b>⚠ No signal from this group.</b> ' +
      `All G = ${rewards.length} rewards equal ${g(rewards[0])}, so std(R) = 0 and every Â<sub>i</sub> = 0 ` +
      `(Property 4.1): the clipped surrogate has zero gradient; ${consequence}${k3}</div>`
    );
  }

  function niceCeiling(value) {
    const scale = 10 ** Math.floor(Math.log10(Math.max(value, 1e-12)));
    return Math.max(0.1, [1, 2, 5, 10].map((m) => m * scale).find((v) => v >= value));
  }

  /** The y range of a panel (grpo_core.lab.spec.PANELS): two numbers, or a rule. */
  function yRange(rule, state) {
    if (Array.isArray(rule)) return rule;
    if (rule === "rewards") return [Math.min(...state.rewards), Math.max(...state.rewards)];
    if (rule === "entropy") return [0, Math.log(state.names.length)];
    return [0, niceCeiling(1.1 * Math.max(...state.curves.kl[1]))]; // "kl"
  }

  /** One SVG per panel of the spec. */
  function curvePanels(state, panels) {
    const c = state.curves;
    const last = Math.max(10, ...c.p_best[0]);
    const bestName = state.names[state.best];
    return panels.map(({ title, series, y }) => {
      const [yLow, yHigh] = yRange(y, state);
      const heading = title
        .map(([text, color]) => {
          const words = escape(text.replace("best", bestName));
          return color ? `<tspan fill="${COLORS[color]}">${words}</tspan>` : words;
        })
        .join("");
      const w = 300, h = 118, x0 = 36, x1 = w - 10, y0 = 20, y1 = h - 18;
      const xOf = (x) => (x0 + ((x1 - x0) * x) / last).toFixed(1);
      const yOf = (v) => (y1 - ((y1 - y0) * (v - yLow)) / (yHigh - yLow)).toFixed(1);
      const values = c[series[series.length - 1][0]][1];
      const current = values.length ? fmt(values[values.length - 1]) : "—";
      const words = title.map(([text]) => text.replace("best", bestName)).join("");
      // a curve of the GRPO steps (the clip fraction) has no value before the first: said in words, not "—"
      const name = values.length
        ? `Learning curve of ${words} over ${state.steps} steps: now ${current}.`
        : `Learning curve of ${words}: no GRPO step yet.`;
      const lines = series
        .filter(([key]) => c[key][0].length)
        .map(([key, color, stroke]) => {
          const [xs, ys] = c[key]; // at most the controller's CURVE_POINTS
          const points = xs.map((x, i) => `${xOf(x)},${yOf(ys[i])}`).join(" ");
          return `<polyline points="${points}" fill="none" stroke="${COLORS[color]}" stroke-width="${stroke}"/>`;
        });
      return (
        `<svg class="grpo-svg" viewBox="0 0 ${w} ${h}" role="img" aria-label="${escape(name)}">` +
        `<rect x="${x0}" y="${y0}" width="${x1 - x0}" height="${y1 - y0}" class="grpo-panel"/>` +
        `<text x="${x0}" y="13" class="grpo-panel-title">${heading}</text>` +
        `<text x="${x1}" y="13" text-anchor="end" class="grpo-value">${current}</text>` +
        `<text x="${x0 - 4}" y="${y0 + 8}" text-anchor="end" class="grpo-small">${+fixed(yHigh, 2)}</text>` +
        `<text x="${x0 - 4}" y="${y1}" text-anchor="end" class="grpo-small">${+fixed(yLow, 2)}</text>` +
        `<text x="${x1}" y="${y1 + 13}" text-anchor="end" class="grpo-small">step ${last}</text>` +
        `<text x="${x0}" y="${y1 + 13}" class="grpo-small">0</text>${lines.join("")}</svg>`
      );
    });
  }

  function ledgerHtml(state, spec) {
    const items = state.ledger
      .slice()
      .reverse()
      .map(([n, parts]) => `<li><span class="grpo-ledger-n">#${n}</span> ${escape(ledgerText(parts))}</li>`)
      .join("");
    // it scrolls (a narrow lab, a long session): a keyboard reaches it (WCAG 2.1.1)
    return (
      viewTitle("Ledger (most recent first)") +
      `<ol class="grpo-ledger" tabindex="0" aria-label="Ledger, most recent first">${items}</ol>`
    );
  }

  /** The skeleton: every slot, empty; the cards and curve panels those of the spec. */
  function skeleton(spec) {
    return (
      '<div class="grpo-lab-row grpo-lab-cards">' +
      spec.cards
        .map(
          ([css, , label]) =>
            `<div class="grpo-lab-card grpo-lab-${css}"><div class="grpo-card-label">${escape(label)}</div><div class="grpo-card-value">—</div></div>`,
        )
        .join("") +
      "</div>" +
      '<div class="grpo-lab-warning"></div>' +
      '<div class="grpo-lab-row grpo-lab-panels">' +
      `<div class="grpo-lab-panel grpo-lab-policy-panel">${viewTitle("Policy π over the answers")}<div class="grpo-lab-policy"></div></div>` +
      '<div class="grpo-lab-panel grpo-lab-group"></div></div>' +
      `<div class="grpo-lab-panel">${viewTitle("Learning curves")}<div class="grpo-lab-curves">` +
      spec.panels.map(() => '<div class="grpo-curve"></div>').join("") +
      "</div></div>" +
      '<div class="grpo-lab-panel grpo-lab-ledger"></div>' +
      '<div class="grpo-lab-status"><progress class="grpo-lab-progress" max="1" value="0"></progress>' +
      '<span class="grpo-lab-progress-label"></span></div>' +
      '<div class="grpo-lab-reproduce"><span class="grpo-lab-engine"></span> · replay in Python: <code tabindex="0" role="region" aria-label="Python that replays this session"></code></div>'
    );
  }

  /* For a screen reader: what each step did, said once, and the charts' numbers.
   * A polite live region (role="status") gets one sentence per change of the lab's state: the policy, the group's
   * mean reward and advantages per answer, the clip fraction and the KL; it stays silent while a run is under way
   * (its end is said once) and when a control changes nothing it would say. Nothing else in the views is live, so a
   * click is announced once. The policy chart and each learning curve are named with the numbers they draw. In
   * JupyterLab the lab keeps its keys (no notebook shortcut fires from inside it). */
  function summaryText(state, spec) {
    const names = state.names;
    const parts = [`Step ${state.steps}. Policy: ${probsText(state, state.probs)}.`];
    // a Reset the seed box refused changes nothing else: said here, with its ledger number (each refusal is news)
    const [number, newest] = state.ledger[state.ledger.length - 1];
    if (newest[0][0] === "refused") parts.unshift(`Ledger #${number}: ${ledgerText(newest)}.`);
    const group = state.group;
    if (group !== null) {
      const used = group.ratios !== null ? "used by the step" : "sampled";
      const answers = names.flatMap((name, k) => {
        const where = group.actions.flatMap((a, i) => (a === k ? [i] : []));
        return where.length ? [`${name} ×${where.length} ${signed(group.advantages[where[0]])}`] : [];
      });
      parts.push(`Group of ${group.actions.length}, ${used}: mean reward ${fmt(state.stats.mean)}.`);
      parts.push(
        Math.max(...group.rewards) === Math.min(...group.rewards)
          ? "No signal: all rewards equal, every advantage 0."
          : `Advantages: ${answers.join(", ")}.`,
      );
      if (group.ratios !== null) parts.push(`Clip fraction ${fmt(state.stats.clip, 2)}, KL ${fmt(state.stats.kl)}.`);
      if (group.outcome) {
        const said = phrase(spec.ledger[group.outcome], { before: group.kl_before, after: state.stats.kl });
        parts.push(`${said[0].toUpperCase()}${said.slice(1)}.`);
      }
    }
    return parts.join(" ");
  }

  /** The ipywidgets sliders of the JupyterLab lab (and of its snapshot in the book) tell a screen reader the value
   * their readout shows (1.00), not the sum min + k·step the slider computes (0.9999999999999999): each handle's
   * aria-valuetext follows its readout. */
  function sayWhatSlidersShow(lab) {
    for (const slider of lab.querySelectorAll(".widget-slider")) {
      const handle = slider.querySelector("[role=slider]");
      const readout = slider.querySelector(".widget-readout");
      if (!handle || !readout) continue;
      const say = () => {
        const shown = readout.textContent.trim();
        if (handle.getAttribute("aria-valuetext") !== shown) handle.setAttribute("aria-valuetext", shown);
      };
      new MutationObserver(say).observe(slider, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ["aria-valuenow", "aria-valuetext"] });
      say();
    }
  }

  function accessibleViews(el, spec) {
    const status = document.createElement("div");
    status.className = "grpo-lab-summary grpo-sr-only";
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    status.setAttribute("aria-atomic", "true");
    el.appendChild(status);
    el.querySelector(".grpo-lab-progress").setAttribute("aria-label", "Progress of the run");
    // In JupyterLab a key pressed in the lab (the arrows and letters of its "onto" dropdown) belongs to the lab:
    // Lumino matches no notebook shortcut (move the cell selection, insert a cell) under this attribute, and the
    // key does not bubble to the document, where JupyterLab listens. The views may be drawn before the widget
    // manager puts them in the lab (the book's snapshot is drawn once): the lab is looked for until it is there.
    let waiting = false;
    const attach = (frames = 600) => {
      const lab = el.closest(".grpo-lab");
      if (!lab) {
        if (!waiting && frames) {
          waiting = true;
          requestAnimationFrame(() => {
            waiting = false;
            attach(frames - 1);
          });
        }
        return;
      }
      if (lab.hasAttribute("data-lm-suppress-shortcuts")) return;
      lab.setAttribute("data-lm-suppress-shortcuts", "true");
      lab.addEventListener("keydown", (event) => event.stopPropagation());
      sayWhatSlidersShow(lab);
    };
    return (state) => {
      attach();
      const [done, total] = state.progress;
      const text = summaryText(state, spec);
      if (!(total && done < total) && status.textContent !== text) status.textContent = text;
    };
  }

  /* Patch a node in place into the markup's: children are matched in order (a ledger row stays where it is and
   * takes the entry now shown there), a matched element keeps its identity and gets only the attributes that
   * differ, a text that differs is the fresh text node; a node with no match is inserted, one left over removed.
   * A node whose content is unchanged is not written, so the browser restyles only what changed and a focused
   * node (the ledger) keeps the focus. Nothing moves that did not move before: the rows of the ledger and the
   * columns of the table stay put (lab.css), and a changed number is a new text node, since the browser counts a
   * text node whose start moved (a right-aligned number that grew) as a layout shift. */
  const similar = (a, b) => a.nodeType === b.nodeType && a.nodeName === b.nodeName;

  function patchNode(live, fresh) {
    if (live.nodeType !== 1) {
      if (live.data !== fresh.data) live.replaceWith(fresh);
      return;
    }
    for (const { name, value } of fresh.attributes) {
      if (live.getAttribute(name) !== value) live.setAttribute(name, value);
    }
    for (const { name } of [...live.attributes]) if (!fresh.hasAttribute(name)) live.removeAttribute(name);
    patchChildren(live, fresh);
  }

  function patchChildren(live, fresh) {
    let next = live.firstChild;
    for (const node of [...fresh.childNodes]) {
      if (next && !similar(next, node) && next.nextSibling && similar(next.nextSibling, node)) {
        const gone = next; // the node before a match is gone (the warning's bold lead, say)
        next = next.nextSibling;
        gone.remove();
      }
      if (next && similar(next, node)) {
        const match = next;
        next = match.nextSibling;
        patchNode(match, node);
      } else live.insertBefore(node, next);
    }
    while (next) {
      const after = next.nextSibling;
      next.remove();
      next = after;
    }
  }

  /** Build the views inside ``el`` once, from the lab's spec (grpo_core.lab.spec); returns {update(state)},
   * which redraws from a state every slot whose content changed, and only those. */
  function mount(el, spec) {
    palette(spec);
    el.classList.add("grpo-lab-views");
    el.innerHTML = skeleton(spec);
    const $ = (selector) => el.querySelector(selector);
    const cards = spec.cards.map(([css, key, label, digits]) => ({
      key,
      label: label.includes("best") ? $(`.grpo-lab-${css} .grpo-card-label`) : null,
      text: label,
      digits,
      value: $(`.grpo-lab-${css} .grpo-card-value`),
    }));
    const slots = {
      warning: $(".grpo-lab-warning"),
      policy: $(".grpo-lab-policy"),
      group: $(".grpo-lab-group"),
      curves: [...el.querySelectorAll(".grpo-lab-curves .grpo-curve")],
      ledger: $(".grpo-lab-ledger"),
      progress: $(".grpo-lab-progress"),
      progressLabel: $(".grpo-lab-progress-label"),
      engine: $(".grpo-lab-engine"),
      reproduce: $(".grpo-lab-reproduce code"),
    };
    const written = new Map(); // slot -> the markup it holds
    const parsed = document.createElement("template");
    const html = (slot, markup) => {
      if (written.get(slot) !== markup) {
        parsed.innerHTML = markup;
        patchChildren(slot, parsed.content);
        written.set(slot, markup);
      }
    };
    const text = (slot, words) => {
      if (slot.textContent !== words) slot.textContent = words;
    };
    const attribute = (slot, name, value) => {
      if (slot.getAttribute(name) !== value) slot.setAttribute(name, value);
    };
    const describe = accessibleViews(el, spec);
    return {
      el,
      update(state) {
        for (const card of cards) {
          const value = state.stats[card.key];
          text(card.value, card.digits ? fmt(value, card.digits) : String(value));
          if (card.label) text(card.label, card.text.replace("best", state.names[state.best]));
        }
        html(slots.warning, warningHtml(state, spec));
        html(slots.policy, policySvg(state));
        html(slots.group, groupHtml(state));
        curvePanels(state, spec.panels).forEach((svg, i) => html(slots.curves[i], svg));
        html(slots.ledger, ledgerHtml(state, spec));
        const [done, total] = state.progress;
        attribute(slots.progress, "max", String(Math.max(total, 1)));
        attribute(slots.progress, "value", String(done));
        attribute(slots.progress, "style", `visibility: ${total ? "visible" : "hidden"}`);
        text(slots.progressLabel, total ? `${done} / ${total} steps` : "");
        text(slots.engine, state.engine);
        text(slots.reproduce, replay(state.session));
        describe(state);
      },
    };
  }

  root.GRPOLab = root.GRPOLab || {};
  root.GRPOLab.view = { mount, warningHtml, summaryText };
})(globalThis);
