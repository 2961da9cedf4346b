/* GRPO Companion, the §11 bandit lab on the static site: the site's adapter of the one controller
 * (lab-controller.js, which grpo_core.lab.BanditLab runs in the kernel too). Here it has controls in plain HTML,
 * built from the lab's one definition, GRPOLab.spec (lab-spec.js, written from grpo_core.lab.spec at every build
 * of the book), runs the controller's engine commands on the in-page engine (lab-engine.js) and hands each new
 * state to the one view module (lab-view.js). No server, no network: everything runs in this page.
 *
 * Every element with the class "grpo-lab-live" becomes a lab (its content, a
 * note for readers without JavaScript, is replaced). data-seed sets the seed.
 * Classic script: defines globalThis.GRPOLab.site and mounts on DOMContentLoaded.
 */
(function (root) {
  "use strict";

  const SPEC = root.GRPOLab.spec;
  const { names: NAMES, rewards: REWARDS, limits: LIMITS, words: WORDS } = SPEC;
  const TOP_ACTION = LIMITS.top_action;
  const RUN_LABEL = SPEC.actions.find(({ name }) => name === "run").label; // "Stop" while it runs
  const ENGINE =
    "JavaScript engine: grpo_core's bandit step and NumPy's default_rng, ported, running in this page";

  const CONTROLLER = root.GRPOLab.controller; // the one controller and its one formatter (fixed)

  /** A slider's readout: the value it shows, beside it and, for a screen reader, as the slider's own value text
   * (the readout is hidden from assistive technology: an <output> is a live region, which would say it again). */
  function readout(slider, output, digits) {
    const shown = CONTROLLER.fixed(Number(slider.value), digits);
    output.textContent = shown;
    slider.setAttribute("aria-valuetext", shown);
  }

  /** One lab in the page: the page's engine under the one controller, its controls and views. */
  class SiteLab {
    constructor(container, seed) {
      this.E = root.GRPOLab.engine;
      this.run = new this.E.BanditGRPO({ rewards: REWARDS, seed });
      this.frame = 0;
      this.build(container);
      this.lab = CONTROLLER.create({ engine: ENGINE }, this.snapshot());
      this.current = this.lab.init();
      this.render();
    }

    // -- construction -------------------------------------------------------
    build(container) {
      container.classList.add("grpo-lab");
      container.innerHTML = "";
      const html = (tag, attrs = {}, text = "") => {
        const el = document.createElement(tag);
        for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, value);
        if (text) el.innerHTML = text;
        return el;
      };
      const header = html("div", { class: "grpo-lab-header" });
      header.innerHTML =
        `<div class="grpo-header-title" role="heading" aria-level="3">${SPEC.title}</div>` +
        `<div class="grpo-header-sub">${SPEC.subtitle}</div>`;
      const body = html("div", { class: "grpo-lab-body" });
      const controls = html("div", { class: "grpo-lab-controls" });
      const views = html("div");
      body.append(controls, views);
      container.append(header, body);
      this.controls = {};
      const section = (title) =>
        controls.append(html("div", { class: "grpo-section", role: "heading", "aria-level": "4" }, title));
      const slider = (knob, value) => {
        const row = html("label", { class: `grpo-control grpo-lab-${knob.name.replace("_", "-")}` });
        const attrs = { type: "range", min: knob.minimum, max: knob.maximum, step: knob.step, value: String(value) };
        const input = html("input", { ...attrs, "aria-label": knob.label });
        const output = html("output", { "aria-hidden": "true" });
        readout(input, output, knob.digits);
        row.append(html("span", {}, knob.label), input, output);
        input.addEventListener("input", () => readout(input, output, knob.digits));
        input.addEventListener("change", () => this.configure(knob.name, Number(input.value)));
        controls.append(row);
        this.controls[knob.name] = input;
      };
      const button = (text, css, action, title) => {
        const el = html("button", { type: "button", class: css, ...(title ? { title } : {}) }, text);
        el.addEventListener("click", action);
        return el;
      };
      // the buttons of grpo_core.lab.spec.ACTIONS, each calling the lab's method of its name (Run N steps: toggleRun)
      const act = (name) => (name === "run" ? () => this.toggleRun() : () => this.click(name));
      this.buttons = Object.fromEntries(
        SPEC.actions.map(({ name, label, tooltip }) => [name, button(label, `grpo-lab-${name}`, act(name), tooltip)]),
      );
      const field = (name, label, value, attrs) => {
        const row = html("label", { class: `grpo-control grpo-wide grpo-lab-${name}` });
        const input = html("input", { ...attrs, value: String(value) });
        row.append(html("span", {}, label), input);
        controls.append(row);
        this.controls[name] = input;
      };
      const toggle = (knob, value) => {
        const group = html("div", { class: `grpo-toggle grpo-lab-${knob.name}`, role: "group", "aria-label": knob.label });
        this.toggles = knob.options.map(([label, option]) => {
          const el = button(label, "", () => this.configure(knob.name, option));
          el.dataset.value = option;
          group.append(el);
          return el;
        });
        this.toggleKnob = knob.name;
        controls.append(group);
      };
      let heading = null;
      for (const knob of SPEC.knobs) {
        if (knob.section !== heading) section((heading = knob.section));
        (knob.options ? toggle : slider)(knob, this.run.config[knob.name]);
      }
      const [actionsTitle, sharpenTitle] = WORDS.sections;
      section(actionsTitle);
      const actions = html("div", { class: "grpo-buttons" });
      const { sharpen: sharpenButton, ...actionButtons } = this.buttons;
      actions.append(...Object.values(actionButtons));
      controls.append(actions);
      field("steps", WORDS.steps, LIMITS.steps, { type: "number", min: 1, max: LIMITS.max_steps_per_run, step: 1 });
      // text, not number: a number box rounds a seed above 2**53 to a double
      field("seed", WORDS.seed, this.run.seed, { type: "text", inputmode: "numeric", spellcheck: "false" });
      section(sharpenTitle);
      const onto = html("label", { class: "grpo-control grpo-wide grpo-lab-sharpen-action" });
      const select = html("select", { "aria-label": `sharpen ${WORDS.sharpen_action}` });
      select.append(html("option", { value: String(TOP_ACTION) }, WORDS.top_action));
      NAMES.forEach((name, k) => select.append(html("option", { value: String(k) }, name)));
      select.value = String(LIMITS.sharpen_action);
      onto.append(html("span", {}, WORDS.sharpen_action), select);
      controls.append(onto);
      this.controls.sharpen_action = select;
      const probRow = html("label", { class: "grpo-control grpo-lab-sharpen-prob" });
      const sharp = LIMITS.sharpen_prob;
      const prob = html("input", { type: "range", min: sharp.minimum, max: sharp.maximum, step: sharp.step, value: String(sharp.default), "aria-label": WORDS.sharpen_prob });
      const probOut = html("output", { "aria-hidden": "true" });
      readout(prob, probOut, 2);
      prob.addEventListener("input", () => readout(prob, probOut, 2));
      probRow.append(html("span", {}, WORDS.sharpen_prob), prob, probOut);
      controls.append(probRow);
      this.controls.sharpen_prob = prob;
      const sharpen = html("div", { class: "grpo-buttons" });
      sharpen.append(sharpenButton);
      controls.append(sharpen);
      controls.append(html("div", { class: "grpo-note" }, WORDS.note));
      this.view = root.GRPOLab.view.mount(views, SPEC);
    }

    // -- actions: the controller's, the engine's commands run here ----------------
    /** One action of the controller (lab-controller.js): its plan's commands run on the page's engine, then
     * committed; the views redrawn from the new state. */
    act(action) {
      const plan = this.lab.plan(action, this.snapshot());
      if (plan.error) throw new Error(plan.error.message);
      const reports = plan.commands.map((command) => this.execute(command));
      this.current = this.lab.commit(reports, this.snapshot());
      this.render();
      return this.current;
    }

    /** One engine command of the controller, on lab-engine.js; what it reports, in the controller's words. */
    execute([verb, argument]) {
      const { E, run } = this;
      const c = run.config;
      if (verb === "sample") {
        const { actions, rewards } = run.sample();
        return { actions, rewards, advantages: E.advantages(rewards, c.advantage, c.adv_eps), mean: E.npMean(rewards), std: E.npStd(rewards) };
      }
      if (verb === "step") {
        let r;
        try {
          r = run.step();
        } catch (error) {
          if (!(error instanceof E.Diverged)) throw error;
          return { diverged: error.message };
        }
        return {
          actions: r.actions, rewards: r.rewards, advantages: r.advantages, ratios: r.ratios, clipped: r.clipped,
          old_probs: r.oldProbs, ref_probs: r.refProbs, probs: r.probs, kl: r.kl, mean: r.rewardMean,
          std: r.rewardStd, clip: r.clipFraction, zero_variance: r.zeroVariance,
        };
      }
      if (verb === "configure") run.configure(argument);
      else if (verb === "drop") run.pending = null;
      else if (verb === "advantages") return E.advantages(argument, c.advantage, c.adv_eps);
      else if (verb === "set_policy") run.setPolicy(argument);
      else if (verb === "reset") run.reset(E.seedValue(argument));
      else throw new Error(`unknown engine command ${verb}`);
      return null;
    }

    /** The engine's policy, as the controller reads it. */
    snapshot() {
      const { E, run } = this;
      const probs = run.probs, ref = run.refProbs;
      return {
        probs, ref_probs: ref, seed: String(run.seed), steps: run.history.length,
        config: Object.fromEntries(SPEC.knobs.map((k) => [k.name, run.config[k.name]])), pending: run.pending !== null,
        value: E.stateValue(probs, run.rewardTable), kl: E.categoricalKl(probs, ref), entropy: E.entropy(probs),
      };
    }

    click(name) {
      if (name === "sample" || name === "step") this.act({ do: name });
      else if (name === "reset") this.act({ do: "reset", seed: this.controls.seed.value });
      else if (name === "sharpen") {
        const onto = parseInt(this.controls.sharpen_action.value, 10);
        this.act({ do: "sharpen", onto, prob: Number(this.controls.sharpen_prob.value) });
      }
    }

    configure(name, value) {
      this.act({ do: "configure", name, value });
    }

    /** Run N steps, one per animation frame; pressed again (Stop), or any other control, ends the run. */
    toggleRun() {
      if (this.running) {
        this.act({ do: "stop" });
        return;
      }
      const total = Math.min(Math.max(parseInt(this.controls.steps.value, 10) || 1, 1), LIMITS.max_steps_per_run);
      this.controls.steps.value = String(total);
      this.act({ do: "run", steps: total });
      const tick = () => {
        if (!this.running) return;
        this.act({ do: "tick" });
        if (this.running) this.frame = root.requestAnimationFrame(tick);
      };
      this.frame = root.requestAnimationFrame(tick);
    }

    get running() {
      return this.current.running;
    }

    state() {
      return this.current;
    }

    render() {
      if (!this.running) root.cancelAnimationFrame(this.frame);
      this.buttons.run.textContent = this.running ? "Stop" : RUN_LABEL;
      for (const el of this.toggles) el.setAttribute("aria-pressed", String(el.dataset.value === this.run.config[this.toggleKnob]));
      this.view.update(this.current);
    }
  }

  function mountAll() {
    const labs = [];
    for (const el of document.querySelectorAll(".grpo-lab-live")) {
      const seed = el.dataset.seed || "0";
      labs.push(new SiteLab(el, seed));
    }
    root.GRPOLab.labs = labs;
    return labs;
  }

  root.GRPOLab = root.GRPOLab || {};
  root.GRPOLab.site = { SiteLab, mountAll };
  if (root.document) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
    else mountAll();
  }
})(globalThis);
