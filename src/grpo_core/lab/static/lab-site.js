/* GRPO Companion, the §11 bandit lab on the static site: controls, in plain HTML,
 * over the in-page engine (lab-engine.js), drawn by the one view module
 * (lab-view.js). It mirrors grpo_core.lab.BanditLab: the same controls, the
 * same ledger, the same state object, so the page and JupyterLab show the
 * same lab. No server, no network: everything runs in this page.
 *
 * Its controls are built from the lab's one definition, GRPOLab.spec
 * (lab-spec.js, written from grpo_core.lab.spec at every build of the book),
 * as the ipywidgets of BanditLab are; a knob takes the value its slider shows.
 * It records the session since the last Reset (grpo_core.lab.state.Session)
 * that the view prints as the Python that replays it. Seeds are BigInt, 0 to
 * 2**64 - 1, taken from the seed box in full. A step that diverges (the
 * engine's Diverged) stops the run and says why in the ledger.
 *
 * Every element with the class "grpo-lab-live" becomes a lab (its content, a
 * note for readers without JavaScript, is replaced). data-seed sets the seed.
 * Classic script: defines globalThis.GRPOLab.site and mounts on DOMContentLoaded.
 */
(function (root) {
  "use strict";

  const SPEC = root.GRPOLab.spec;
  const { names: NAMES, rewards: REWARDS, limits: LIMITS, words: WORDS } = SPEC;
  const KNOB = Object.fromEntries(SPEC.knobs.map((knob) => [knob.name, knob]));
  const TOP_ACTION = LIMITS.top_action;
  const RUN_LABEL = SPEC.actions.find(({ name }) => name === "run").label; // "Stop" while it runs
  const ENGINE =
    "JavaScript engine: grpo_core's bandit step and NumPy's default_rng, ported, running in this page";

  const VIEW = root.GRPOLab.view; // the one formatter (fixed) and the rule of what a step did (klOutcome)
  const argmax = (xs) => xs.reduce((best, x, k) => (x > xs[best] ? k : best), 0);

  /** The value a knob's control shows (grpo_core.lab.spec.Knob.value): a slider's rounded to its decimals. */
  function knobValue(knob, raw) {
    if (knob.options) return raw;
    return knob.integer ? Math.round(Number(raw)) : Number(VIEW.fixed(Number(raw), knob.digits));
  }

  /** The largest k3 weight π_ref(a)/π(a) over a group's answers and that answer (grpo_core.lab.state.k3_weight). */
  function k3(refProbs, probs, actions) {
    let best = 0;
    actions.forEach((a, i) => {
      if (refProbs[a] / probs[a] > refProbs[actions[best]] / probs[actions[best]]) best = i;
    });
    return [refProbs[actions[best]] / probs[actions[best]], actions[best]];
  }

  /** A slider's readout: the value it shows, beside it and, for a screen reader, as the slider's own value text
   * (the readout is hidden from assistive technology: an <output> is a live region, which would say it again). */
  function readout(slider, output, digits) {
    const shown = VIEW.fixed(Number(slider.value), digits);
    output.textContent = shown;
    slider.setAttribute("aria-valuetext", shown);
  }

  /** One lab in the page: the engine, the group on screen, the curves, the ledger, the session. */
  class SiteLab {
    constructor(container, seed) {
      const E = root.GRPOLab.engine;
      this.E = E;
      this.run = new E.BanditGRPO({ rewards: REWARDS, seed });
      this.newSession();
      this.best = argmax(REWARDS);
      this.group = null;
      this.ledger = [];
      this.entries = 0;
      this.lastKnob = null;
      this.progress = [0, 0];
      this.running = null;
      this.build(container);
      this.clearCurves();
      this.log(["start", { seed: String(this.run.seed), probs: this.run.probs }]);
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
        input.addEventListener("change", () => this.configure(knob.name, knobValue(knob, input.value)));
        controls.append(row);
        this.controls[knob.name] = input;
      };
      const button = (text, css, action, title) => {
        const el = html("button", { type: "button", class: css, ...(title ? { title } : {}) }, text);
        el.addEventListener("click", action);
        return el;
      };
      // the buttons of grpo_core.lab.spec.ACTIONS, each calling the lab's method of its name (Run N steps: toggleRun)
      const act = (name) => (name === "run" ? () => this.toggleRun() : () => this.click(() => this[name]()));
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

    // -- actions (grpo_core.lab.BanditLab's, one for one) ---------------------
    click(action) {
      this.stop();
      action();
      this.render();
    }

    /** The session since the last Reset (grpo_core.lab.state.Session): the grpo_core calls that replay it. */
    newSession() {
      const c = this.run.config;
      this.session = [["new", { seed: String(this.run.seed), config: Object.fromEntries(SPEC.knobs.map((k) => [k.name, c[k.name]])) }]];
    }

    record(verb, argument = null) {
      const last = this.session[this.session.length - 1];
      if (verb === "step" && last[0] === "step") last[1] += argument;
      else if (verb === "configure" && last[0] === "configure") last[1] = { ...last[1], ...argument };
      else this.session.push([verb, argument]);
    }

    sample() {
      const { actions, rewards } = this.run.sample();
      this.record("sample");
      const c = this.run.config;
      this.group = this.sampledGroup(actions, rewards);
      const values = { G: actions.length, drawn: actions.map((a) => NAMES[a]).join(""), mean: this.E.npMean(rewards) };
      if (Math.max(...rewards) === Math.min(...rewards)) this.log(["sample_silent", values]);
      else this.log(["sample", { ...values, std: this.E.npStd(rewards) }]);
    }

    /** A group just drawn from π (grpo_core.lab.state.GroupView.sampled), its k3 weights at that π. */
    sampledGroup(actions, rewards) {
      const c = this.run.config;
      const [k3Weight, k3Answer] = k3(this.run.refProbs, this.run.probs, actions);
      const advantages = this.E.advantages(rewards, c.advantage, c.adv_eps);
      return { actions, rewards, advantages, ratios: null, clipped: null, eps: null, beta: null, kl_before: null, outcome: null, k3_weight: k3Weight, k3_answer: k3Answer };
    }

    step() {
      const before = this.run.probs[this.best];
      const result = this.doStep();
      if (result === null) return;
      const group = this.group;
      const parts = [
        ["step", { step: this.run.history.length, mean: result.rewardMean, std: result.rewardStd, clip: result.clipFraction, best: NAMES[this.best], before, after: result.probs[this.best], kl: result.kl }],
      ];
      if (group.outcome !== null) parts.push([group.outcome, { before: group.kl_before, after: result.kl }]);
      if (group.beta > 0 && group.k3_weight >= SPEC.k3_weight_large) parts.push([group.k3_weight < SPEC.k3_weight_shown ? "k3" : "k3_huge", { weight: group.k3_weight, answer: NAMES[group.k3_answer] }]);
      this.log(...parts);
    }

    /** A step of the run; a step that diverges is logged and recorded, and gives null. */
    doStep() {
      const klBefore = this.curves.kl[1][this.curves.kl[1].length - 1];
      let result;
      try {
        result = this.run.step();
      } catch (error) {
        if (!(error instanceof this.E.Diverged)) throw error;
        this.record("diverged", error.message);
        this.group = null;
        this.log(["diverged", { message: error.message }]);
        return null;
      }
      this.record("step", 1);
      const c = this.run.config;
      const moved = result.probs.some((p, k) => p !== result.oldProbs[k]);
      const [k3Weight, k3Answer] = k3(result.refProbs, result.oldProbs, result.actions);
      this.group = {
        actions: result.actions,
        rewards: result.rewards,
        advantages: result.advantages,
        ratios: result.ratios,
        clipped: result.clipped,
        eps: c.eps_low,
        beta: c.beta,
        kl_before: klBefore,
        outcome: result.zeroVariance ? VIEW.klOutcome(moved, klBefore, result.kl, SPEC.kl_still) : null,
        k3_weight: k3Weight,
        k3_answer: k3Answer,
      };
      const step = this.run.history.length;
      for (const [key, value] of [["mean_reward", result.rewardMean], ["clip_fraction", result.clipFraction]]) {
        this.curves[key][0].push(step);
        this.curves[key][1].push(value);
      }
      this.recordPolicy();
      return result;
    }

    toggleRun() {
      if (this.running) {
        this.stop();
        this.render();
        return;
      }
      const total = Math.min(Math.max(parseInt(this.controls.steps.value, 10) || 1, 1), LIMITS.max_steps_per_run);
      this.controls.steps.value = String(total);
      const first = this.run.history.length;
      const before = this.run.probs[this.best];
      const run = { total, done: 0, silent: 0, first, before, frame: 0 };
      this.running = run;
      this.buttons.run.textContent = "Stop";
      this.progress = [0, total];
      const tick = () => {
        if (this.running !== run) return;
        const result = this.doStep();
        if (result === null) {
          this.finishRun(run, true);
          this.render();
          return;
        }
        run.done += 1;
        run.silent += result.zeroVariance ? 1 : 0;
        this.progress = [run.done, total];
        if (run.done === total) this.finishRun(run, false);
        else run.frame = root.requestAnimationFrame(tick);
        this.render();
      };
      run.frame = root.requestAnimationFrame(tick);
      this.render();
    }

    finishRun(run, stopped) {
      this.running = null;
      root.cancelAnimationFrame(run.frame);
      this.buttons.run.textContent = RUN_LABEL;
      const kl = this.curves.kl[1][this.curves.kl[1].length - 1];
      const values = { total: run.total, done: run.done, first: run.first, last: this.run.history.length, best: NAMES[this.best], before: run.before, after: this.run.probs[this.best], kl, silent: run.silent };
      this.log([stopped ? "run_stopped" : "run", values]);
    }

    /** Cancel a run in progress (any other control does). */
    stop() {
      if (this.running) this.finishRun(this.running, true);
    }

    sharpen() {
      let target = parseInt(this.controls.sharpen_action.value, 10);
      const prob = Number(this.controls.sharpen_prob.value);
      if (target === TOP_ACTION) target = argmax(this.run.probs);
      const probs = NAMES.map((_, k) => (k === target ? prob : (1.0 - prob) / (NAMES.length - 1)));
      this.run.setPolicy(probs);
      this.record("set_policy", probs);
      this.group = null;
      this.recordPolicy();
      this.log(["sharpen", { answer: NAMES[target], probs: this.run.probs }]);
    }

    reset() {
      const text = this.controls.seed.value.trim();
      let seed;
      try {
        seed = this.E.seedValue(text);
      } catch (error) {
        this.log(["refused", { maximum: LIMITS.max_seed, text }]);
        return;
      }
      this.run.reset(seed);
      this.newSession();
      this.group = null;
      this.progress = [0, 0];
      this.clearCurves();
      this.log(["reset", { seed: String(this.run.seed), probs: this.run.probs }]);
    }

    configure(name, value) {
      this.stop();
      const changes = name === "eps_low" ? { eps_low: value, eps_high: null } : { [name]: value };
      this.run.configure(changes);
      this.record("configure", changes);
      const c = this.run.config;
      if (name === "group_size" && this.run.pending !== null) {
        this.run.pending = null; // a group of the old size would not match the slider
        this.record("drop");
        this.group = null;
      } else if (name === "advantage" && this.group !== null && this.group.ratios === null) {
        this.group = this.sampledGroup(this.group.actions, this.group.rewards);
      }
      const knob = KNOB[name];
      const entry = knob.options
        ? ["set_option", { knob: knob.short, label: knob.options.find(([, v]) => v === value)[0] }]
        : ["set", { knob: knob.short, value, digits: knob.digits }];
      this.logKnob(name, entry);
      this.render();
    }

    // -- curves and ledger ----------------------------------------------------
    clearCurves() {
      this.curves = Object.fromEntries(SPEC.curve_keys.map((key) => [key, [[], []]]));
      this.recordPolicy();
    }

    recordPolicy() {
      const E = this.E;
      const probs = this.run.probs, ref = this.run.refProbs;
      const step = this.run.history.length;
      const point = {
        value: E.stateValue(probs, this.run.rewardTable),
        p_best: probs[this.best],
        kl: E.categoricalKl(probs, ref),
        entropy: E.entropy(probs),
      };
      for (const [key, value] of Object.entries(point)) {
        this.curves[key][0].push(step);
        this.curves[key][1].push(value);
      }
    }

    /** A ledger entry, its parts [key, values] (grpo_core.lab.spec.LEDGER). */
    log(...parts) {
      this.logKnob(null, ...parts);
    }

    /** A ledger entry; a change of the knob changed just before replaces that entry (one per gesture). */
    logKnob(knob, ...parts) {
      if (knob !== null && knob === this.lastKnob && this.ledger.length) {
        this.ledger[this.ledger.length - 1] = [this.ledger[this.ledger.length - 1][0], parts];
      } else {
        this.entries += 1;
        this.ledger.push([this.entries, parts]);
        if (this.ledger.length > LIMITS.ledger_length) this.ledger.shift();
      }
      this.lastKnob = knob;
    }

    // -- the one state, the one place that draws ------------------------------
    state() {
      const run = this.run;
      const c = run.config;
      const group = this.group;
      const latest = (key) => this.curves[key][1][this.curves[key][1].length - 1];
      const stepped = group !== null && group.ratios !== null;
      return {
        engine: ENGINE,
        names: NAMES,
        rewards: run.rewardTable,
        best: this.best,
        probs: run.probs,
        ref_probs: run.refProbs,
        config: Object.fromEntries(SPEC.knobs.map((k) => [k.name, c[k.name]])),
        seed: String(run.seed),
        steps: run.history.length,
        group,
        stats: {
          mean: group === null ? null : this.E.npMean(group.rewards),
          std: group === null ? null : this.E.npStd(group.rewards),
          clip: stepped ? group.clipped.filter(Boolean).length / group.clipped.length : null,
          kl: latest("kl"),
          entropy: latest("entropy"),
          p_best: latest("p_best"),
          steps: run.history.length,
        },
        curves: this.curves,
        ledger: this.ledger,
        progress: this.progress,
        session: this.session,
      };
    }

    render() {
      for (const el of this.toggles) el.setAttribute("aria-pressed", String(el.dataset.value === this.run.config[this.toggleKnob]));
      this.view.update(this.state());
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
