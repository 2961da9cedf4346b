/* GRPO Companion, the §11 bandit lab's one controller: its actions, their rules, the session, the ledger, the
 * curves and the state every view is drawn from, for both labs.
 *
 * It touches no DOM and imports no engine. A lab's host runs the engine (the page's lab-engine.js on the site,
 * grpo_core.bandit.BanditGRPO in the kernel, where this file runs in embedded V8): an action is planned, the host
 * executes the engine commands of the plan and hands back what each reported, and the controller commits them.
 *
 *   const lab = GRPOLab.controller.create({ engine }, snapshot);   // the host's words for its engine
 *   const plan = lab.plan(action, snapshot);  // {commands: [[verb, argument], ...]} or {error: {type, message}}
 *   const state = lab.commit(reports, snapshot);  // the state after the action (what lab-view.js draws)
 *
 * Actions: {do: "sample"}, {do: "step"}, {do: "run", steps} (then {do: "tick"} per step while state.running, or
 * {do: "stop"}), {do: "sharpen", onto, prob}, {do: "reset", seed} (the seed box's text), {do: "configure", name,
 * value}. Any other action ends a run in progress first. Commands: ["sample"] reports {actions, rewards,
 * advantages, mean, std}; ["step"] reports the step (actions, rewards, advantages, ratios, clipped, old_probs,
 * ref_probs, probs, kl, mean, std, clip, zero_variance) or {diverged: message}; ["configure", changes],
 * ["drop"] (the pending group), ["set_policy", probs] and ["reset", seed] report nothing; ["advantages", rewards]
 * reports Â. A snapshot is the engine's policy: {probs, ref_probs, seed, steps, config, pending, value, kl,
 * entropy}. The session is what grpo_core.bandit.BanditGRPO replays (replay() prints it as Python); the ledger's
 * entries are template keys of spec.ledger with their numbers, written by the one formatter, fixed().
 * Classic script: defines globalThis.GRPOLab.controller (after lab-spec.js).
 */
(function (root) {
  "use strict";

  const SPEC = root.GRPOLab.spec;
  const { names: NAMES, limits: LIMITS } = SPEC;
  const KNOB = Object.fromEntries(SPEC.knobs.map((knob) => [knob.name, knob]));
  const TOP_ACTION = LIMITS.top_action;
  const CURVE_POINTS = 300; // a longer curve is drawn subsampled to this many points
  const argmax = (xs) => xs.reduce((best, x, k) => (x > xs[best] ? k : best), 0);

  // -- the one formatter ------------------------------------------------------------------------------------------

  /** The lab's one rounding rule: the exact binary value of x with `digits` decimals, an exact tie (0.625 to two
   * decimals) to even, as Python's format does. toFixed alone takes a tie away from zero; toFixed(100) is the exact
   * decimal expansion of any double the lab shows, so a tie is seen exactly. */
  function fixed(x, digits) {
    const away = x.toFixed(digits);
    const exact = Math.abs(x).toFixed(100);
    const cut = exact.indexOf(".") + digits + 1;
    if (!/^50*$/.test(exact.slice(cut))) return away;
    const toward = exact.slice(0, cut).replace(/\.$/, "");
    if (Number(toward[toward.length - 1]) % 2 !== 0) return away;
    return (x < 0 ? "-" : "") + toward;
  }
  const fmt = (value, digits = 3) => (value === null || value === undefined ? "—" : fixed(Number(value), digits));
  /** An advantage as the group table shows it: a sign and two decimals, 0.00 unsigned. */
  const signed = (value) => {
    const text = fixed(Math.abs(value), 2);
    return text === "0.00" ? text : (value < 0 ? "-" : "+") + text;
  };
  const g = (value) => String(Number(value)); // Python's :g for the rewards of the table

  /** One phrase of the ledger (spec.ledger) with its values: {name} as it is, {name:.3f} a number or a list of
   * numbers ("[a b c]") by fixed, {name:.{digits}f} with the decimals `digits` of the values. */
  function phrase(template, values) {
    const field = (value, format) => {
      if (Array.isArray(value)) return "[" + value.map((v) => field(v, format)).join(" ") + "]";
      return format ? fixed(value, Number(format.slice(1, -1))) : String(value);
    };
    return template.replace(/\{(\w+)(?::((?:[^{}]|\{\w+\})*))?\}/g, (_, name, format) =>
      field(values[name], format && format.replace(/\{(\w+)\}/g, (__, key) => values[key])),
    );
  }
  /** A ledger entry, its parts [key, values], as the lab shows it. */
  const ledgerText = (parts) => parts.map(([key, values]) => phrase(SPEC.ledger[key], values)).join(" · ");

  /** A float as Python reads it back exactly (repr keeps the ".0" of an integral value). */
  const pyFloat = (x) => (Number.isInteger(x) && Math.abs(x) < 1e16 ? x.toFixed(1) : String(x));

  /** The session as the Python that replays it on grpo_core.bandit.BanditGRPO. */
  function replay(session) {
    const value = (name, v) =>
      v === null ? "None" : typeof v === "string" ? `'${v}'` : KNOB[name] && KNOB[name].integer ? String(v) : pyFloat(v);
    const keywords = (changes) => Object.entries(changes).map(([k, v]) => `${k}=${value(k, v)}`).join(", ");
    const imports = ["from grpo_core.bandit import BanditGRPO, GRPOConfig"];
    const lines = [];
    for (const [verb, argument] of session) {
      if (verb === "new") lines.push(`run = BanditGRPO(seed=${argument.seed}, config=GRPOConfig(${keywords(argument.config)}))`);
      else if (verb === "configure") lines.push(`run.configure(${keywords(argument)})`);
      else if (verb === "sample") lines.push("run.sample()");
      else if (verb === "step") lines.push(argument === 1 ? "run.step()" : `run.run(${argument})`);
      else if (verb === "drop") lines.push("run.pending = None  # the lab drops a group of the old G");
      else if (verb === "set_policy") lines.push(`run.set_policy([${argument.map(pyFloat).join(", ")}])`);
      else if (verb === "diverged") {
        if (imports.length === 1) imports.push("from grpo_core.bandit.trainer import Diverged");
        lines.push("try:", "    run.step()", `except Diverged as error:  # ${argument}`, "    print(error)");
      }
    }
    return [...imports, "", ...lines].join("\n");
  }

  /** A curve as [xs, ys], at most CURVE_POINTS points (the first and the last always kept). */
  function subsample(xs, ys) {
    if (xs.length <= CURVE_POINTS) return [xs.slice(), ys.slice()];
    const keep = [...new Set(Array.from({ length: CURVE_POINTS }, (_, i) => Math.floor((i * (xs.length - 1)) / (CURVE_POINTS - 1))))];
    return [keep.map((i) => xs[i]), keep.map((i) => ys[i])];
  }

  // -- the rules --------------------------------------------------------------------------------------------------

  /** The value a knob's control shows: a slider's rounded to its decimals (1.05, not 1.0499999999999998). */
  function knobValue(knob, raw) {
    if (knob.options) return raw;
    return knob.integer ? Math.round(raw) : Number(fixed(raw, knob.digits));
  }

  /** Why `value` is no value `knob`'s control can take ({type, message}, naming the knob), or null: a toggle takes
   * one of its options, a slider a number minimum + k * step within its range (NaN and ±∞ are none). */
  function knobError(knob, value) {
    const got = `got ${typeof value === "string" ? `'${value}'` : String(value)}`;
    if (knob.options) {
      const values = knob.options.map(([, v]) => v);
      if (values.includes(value)) return null;
      const type = typeof value === "string" ? "ValueError" : "TypeError";
      return { type, message: `${knob.name} must be one of '${values.join("', '")}', ${got}` };
    }
    if (typeof value !== "number") return { type: "TypeError", message: `${knob.name} must be a number, ${got}` };
    const k = (value - knob.minimum) / knob.step;
    if (value >= knob.minimum && value <= knob.maximum && Math.abs(k - Math.round(k)) < 1e-6) return null;
    const slider = `${knob.minimum} to ${knob.maximum} in steps of ${knob.step}`;
    return { type: "ValueError", message: `${knob.name} must be a value of its slider (${slider}), ${got}` };
  }

  /** A knob's change as the engine takes it: the ε slider is a symmetric clip, so it clears eps_high. */
  const knobChanges = (name, value) => (name === "eps_low" ? { eps_low: value, eps_high: null } : { [name]: value });

  /** What a step on a group with no signal did to π: it did not move, or the KL to π_ref went down (toward), up
   * (away) or changed by less than spec.kl_still (stays). */
  function klOutcome(moved, klBefore, klAfter) {
    if (!moved) return "still";
    if (Math.abs(klAfter - klBefore) < SPEC.kl_still) return "stays";
    return klAfter < klBefore ? "toward" : "away";
  }

  /** The largest k3 weight π_ref(a)/π(a) over a group's answers (the KL term's pull on a, eq. 8, unbounded as
   * π(a) → 0) and that answer. */
  function k3(refProbs, probs, actions) {
    let best = 0;
    actions.forEach((a, i) => {
      if (refProbs[a] / probs[a] > refProbs[actions[best]] / probs[actions[best]]) best = i;
    });
    return [refProbs[actions[best]] / probs[actions[best]], actions[best]];
  }

  /** The seed box's text as a seed (a decimal string, 0 to 2**64 - 1), or null. */
  function seedOf(text) {
    const trimmed = String(text).trim();
    return /^[0-9]+$/.test(trimmed) && BigInt(trimmed) <= BigInt(LIMITS.max_seed) ? String(BigInt(trimmed)) : null;
  }

  /** Sharpen π's target (a name, an index or TOP_ACTION) as an index into the answers, or an error. */
  function sharpenTarget(onto) {
    if (typeof onto === "string") {
      if (!NAMES.includes(onto)) return { type: "ValueError", message: `action must be one of ${NAMES.join(", ")}, got '${onto}'` };
      return NAMES.indexOf(onto);
    }
    if (typeof onto !== "number" || !Number.isInteger(onto)) {
      return { type: "TypeError", message: `action must be a name, an index or ${TOP_ACTION}, got ${typeof onto}` };
    }
    if (onto !== TOP_ACTION && !(onto >= 0 && onto < NAMES.length)) {
      return { type: "ValueError", message: `action must be an index from 0 to ${NAMES.length - 1} or ${TOP_ACTION}, got ${onto}` };
    }
    return onto;
  }

  /** Sharpen π's π(onto): a number within the slider's range, as the slider shows it (two decimals). */
  function sharpenProb(prob) {
    if (typeof prob !== "number") return { type: "TypeError", message: `prob must be a number, got ${typeof prob}` };
    const { minimum, maximum } = LIMITS.sharpen_prob;
    if (!(prob >= minimum && prob <= maximum)) {
      return { type: "ValueError", message: `prob must lie in [${minimum}, ${maximum}] (the π(onto) slider), got ${prob}` };
    }
    return Number(fixed(prob, 2));
  }

  /** N of Run N steps: a positive integer, at most LIMITS.max_steps_per_run. */
  function runLength(steps) {
    if (typeof steps !== "number" || !Number.isInteger(steps)) return { type: "TypeError", message: `steps must be an integer, got ${typeof steps}` };
    if (steps < 1 || steps > LIMITS.max_steps_per_run) {
      return { type: "ValueError", message: `steps must be an integer from 1 to ${LIMITS.max_steps_per_run}, got ${steps}` };
    }
    return steps;
  }
  const isError = (value) => value !== null && typeof value === "object" && "type" in value;

  // -- one lab ----------------------------------------------------------------------------------------------------

  /** A lab over one engine, which `engine` names (shown under the views), from the engine's first snapshot. */
  function create({ engine, ledgerLength = LIMITS.ledger_length }, snapshot) {
    const best = argmax(SPEC.rewards);
    let policy = snapshot;
    let group = null; // the group on screen: just sampled (ratios null) or the one the last step used
    let ledger = []; // [[number, parts], ...], oldest first
    let entries = 0;
    let lastKnob = null;
    let progress = [0, 0];
    let running = null; // {total, done, silent, first, before} while Run N steps is under way
    let session;
    let curves;
    let pending = null; // the action planned, committed next

    const newSession = () => {
      session = [["new", { seed: policy.seed, config: { ...policy.config } }]];
    };
    const record = (verb, argument = null) => {
      const last = session[session.length - 1];
      if (verb === "step" && last[0] === "step") last[1] += argument;
      else if (verb === "configure" && last[0] === "configure") last[1] = { ...last[1], ...argument };
      else session.push([verb, argument]);
    };
    /** A ledger entry; a change of the knob changed just before replaces that entry (one per gesture). */
    const log = (knob, ...parts) => {
      if (knob !== null && knob === lastKnob && ledger.length) ledger[ledger.length - 1] = [ledger[ledger.length - 1][0], parts];
      else {
        entries += 1;
        ledger.push([entries, parts]);
        if (ledger.length > ledgerLength) ledger.shift();
      }
      lastKnob = knob;
    };
    const latest = (key) => curves[key][1][curves[key][1].length - 1];
    const push = (key, x, y) => {
      curves[key][0].push(x);
      curves[key][1].push(y);
    };
    /** The current policy's V^π, P(best), KL and H at the current step (a sharpen adds a jump). */
    const recordPolicy = () => {
      const point = { value: policy.value, p_best: policy.probs[best], kl: policy.kl, entropy: policy.entropy };
      for (const key of SPEC.policy_curves) push(key, policy.steps, point[key]);
    };
    const clearCurves = () => {
      curves = Object.fromEntries(SPEC.curve_keys.map((key) => [key, [[], []]]));
      recordPolicy();
    };
    const sampledGroup = ({ actions, rewards, advantages, mean, std }) => {
      const [weight, answer] = k3(policy.ref_probs, policy.probs, actions);
      return { actions, rewards, advantages, ratios: null, clipped: null, eps: null, beta: null, kl_before: null, outcome: null, k3_weight: weight, k3_answer: answer, mean, std, clip: null };
    };

    /** What a step did (its report), into the group on screen, the curves and the session; a step that diverged
     * is logged and gives null. */
    const stepped = (report, klBefore) => {
      if (report.diverged !== undefined) {
        record("diverged", report.diverged);
        group = null;
        log(null, ["diverged", { message: report.diverged }]);
        return null;
      }
      record("step", 1);
      const moved = report.probs.some((p, k) => p !== report.old_probs[k]);
      const [weight, answer] = k3(report.ref_probs, report.old_probs, report.actions);
      group = {
        actions: report.actions,
        rewards: report.rewards,
        advantages: report.advantages,
        ratios: report.ratios,
        clipped: report.clipped,
        eps: policy.config.eps_low,
        beta: policy.config.beta,
        kl_before: klBefore,
        outcome: report.zero_variance ? klOutcome(moved, klBefore, report.kl) : null,
        k3_weight: weight,
        k3_answer: answer,
        mean: report.mean,
        std: report.std,
        clip: report.clip,
      };
      push("mean_reward", policy.steps, report.mean);
      push("clip_fraction", policy.steps, report.clip);
      recordPolicy();
      return report;
    };

    const finishRun = (stopped) => {
      const run = running;
      running = null;
      progress = [run.done, run.total];
      const values = { total: run.total, done: run.done, first: run.first, last: policy.steps, best: NAMES[best], before: run.before, after: policy.probs[best], kl: latest("kl"), silent: run.silent };
      log(null, [stopped ? "run_stopped" : "run", values]);
    };

    // each action: its plan (the engine commands) and its commit (what the reports change)
    const actions = {
      sample: {
        plan: () => [["sample"]],
        commit: ([report]) => {
          record("sample");
          group = sampledGroup(report);
          const values = { G: report.actions.length, drawn: report.actions.map((a) => NAMES[a]).join(""), mean: report.mean };
          if (Math.max(...report.rewards) === Math.min(...report.rewards)) log(null, ["sample_silent", values]);
          else log(null, ["sample", { ...values, std: report.std }]);
        },
      },
      step: {
        plan: () => [["step"]],
        commit: ([report], before) => {
          const klBefore = latest("kl");
          const pBefore = before.probs[best];
          if (stepped(report, klBefore) === null) return;
          const parts = [["step", { step: policy.steps, mean: report.mean, std: report.std, clip: report.clip, best: NAMES[best], before: pBefore, after: report.probs[best], kl: report.kl }]];
          if (group.outcome !== null) parts.push([group.outcome, { before: klBefore, after: report.kl }]);
          if (group.beta > 0 && group.k3_weight >= SPEC.k3_weight_large) {
            parts.push([group.k3_weight < SPEC.k3_weight_shown ? "k3" : "k3_huge", { weight: group.k3_weight, answer: NAMES[group.k3_answer] }]);
          }
          log(null, ...parts);
        },
      },
      run: {
        plan: (action) => {
          const total = runLength(action.steps);
          return isError(total) ? total : [];
        },
        commit: (_, before, action) => {
          running = { total: action.steps, done: 0, silent: 0, first: before.steps, before: before.probs[best] };
          progress = [0, action.steps];
        },
      },
      tick: {
        plan: () => (running ? [["step"]] : []),
        commit: ([report]) => {
          if (report === undefined) return;
          if (stepped(report, latest("kl")) === null) return finishRun(true);
          running.done += 1;
          running.silent += report.zero_variance ? 1 : 0;
          progress = [running.done, running.total];
          if (running.done === running.total) finishRun(false);
        },
      },
      stop: { plan: () => [], commit: () => {} },
      sharpen: {
        plan: (action) => {
          const onto = sharpenTarget(action.onto);
          if (isError(onto)) return onto;
          const prob = sharpenProb(action.prob);
          if (isError(prob)) return prob;
          const target = onto === TOP_ACTION ? argmax(policy.probs) : onto;
          action.target = target;
          return [["set_policy", NAMES.map((_, k) => (k === target ? prob : (1.0 - prob) / (NAMES.length - 1)))]];
        },
        commit: (_, before, action, commands) => {
          record("set_policy", commands[0][1]);
          group = null;
          recordPolicy();
          log(null, ["sharpen", { answer: NAMES[action.target], probs: policy.probs }]);
        },
      },
      reset: {
        plan: (action) => {
          const seed = seedOf(action.seed);
          if (seed === null) {
            action.refused = String(action.seed).trim();
            return [];
          }
          return [["reset", seed]];
        },
        commit: (_, before, action) => {
          if (action.refused !== undefined) {
            log(null, ["refused", { maximum: LIMITS.max_seed, text: action.refused }]);
            return;
          }
          newSession();
          group = null;
          progress = [0, 0];
          clearCurves();
          log(null, ["reset", { seed: policy.seed, probs: policy.probs }]);
        },
      },
      configure: {
        plan: (action) => {
          const knob = KNOB[action.name];
          if (knob === undefined) return { type: "ValueError", message: `name must be a knob of the lab, got '${action.name}'` };
          const error = knobError(knob, action.value);
          if (error !== null) return error;
          action.value = knobValue(knob, action.value);
          const commands = [["configure", knobChanges(action.name, action.value)]];
          if (action.name === "group_size" && policy.pending) commands.push(["drop"]); // a group of the old size
          else if (action.name === "advantage" && group !== null && group.ratios === null) commands.push(["advantages", group.rewards]);
          return commands;
        },
        commit: (reports, before, action, commands) => {
          const knob = KNOB[action.name];
          record("configure", commands[0][1]);
          if (commands.length > 1 && commands[1][0] === "drop") {
            record("drop");
            group = null;
          } else if (commands.length > 1) {
            group = sampledGroup({ ...group, advantages: reports[1] });
          }
          const entry = knob.options
            ? ["set_option", { knob: knob.short, label: knob.options.find(([, v]) => v === action.value)[0] }]
            : ["set", { knob: knob.short, value: action.value, digits: knob.digits }];
          log(action.name, entry);
        },
      },
    };

    /** The one state every view is drawn from. */
    function state() {
      return {
        engine,
        names: NAMES,
        rewards: SPEC.rewards,
        best,
        probs: policy.probs,
        ref_probs: policy.ref_probs,
        config: policy.config,
        seed: policy.seed,
        steps: policy.steps,
        group,
        stats: {
          mean: group === null ? null : group.mean,
          std: group === null ? null : group.std,
          clip: group === null ? null : group.clip,
          kl: latest("kl"),
          entropy: latest("entropy"),
          p_best: latest("p_best"),
          steps: policy.steps,
        },
        curves: Object.fromEntries(SPEC.curve_keys.map((key) => [key, subsample(...curves[key])])),
        ledger: ledger.map(([n, parts]) => [n, parts]),
        progress,
        running: running !== null,
        session: session.map(([verb, argument]) => [verb, argument]), // as it is now (record() grows its last entry)
      };
    }

    return {
      /** The engine commands of an action (an object {do, ...}), or {error: {type, message}} for bad input. */
      plan(action, snapshot) {
        const rule = actions[action.do];
        if (rule === undefined) return { error: { type: "ValueError", message: `unknown action '${action.do}'` } };
        policy = snapshot;
        if (running && action.do !== "tick") finishRun(true); // any other control ends a run
        const commands = rule.plan(action);
        if (isError(commands)) return { error: commands };
        pending = { rule, action, commands, before: snapshot };
        return { commands };
      },
      /** What the engine reported for each command of the plan, and its snapshot after them: the new state. */
      commit(reports, snapshot) {
        const { rule, action, commands, before } = pending;
        pending = null;
        policy = snapshot;
        rule.commit(reports, before, action, commands);
        return state();
      },
      state,
      /** Every curve in full, [xs, ys] per key. */
      curves: () => curves,
      /** The ledger's texts, most recent first. */
      ledgerTexts: () => ledger.map(([, parts]) => ledgerText(parts)).reverse(),
      init() {
        newSession();
        clearCurves();
        log(null, ["start", { seed: policy.seed, probs: policy.probs }]);
        return state();
      },
    };
  }

  /** What the views show, as plain text (the cards' numbers, π, π_ref, the group, the warning). */
  function readout(state) {
    const c = state.config;
    const advantage = KNOB.advantage.options.find(([, v]) => v === c.advantage)[0];
    const pair = (probs) => state.names.map((n, k) => `${n} ${fixed(probs[k], 3)}`).join("  ");
    const lines = [
      `step ${state.steps} · G=${c.group_size} ε=${fixed(c.eps_low, 2)} β=${fixed(c.beta, 3)} lr=${fixed(c.lr, 2)} epochs=${c.inner_epochs} advantage=${advantage}`,
      `π      ${pair(state.probs)}`,
      `π_ref  ${pair(state.ref_probs)}`,
    ];
    const group = state.group;
    if (group !== null) {
      lines.push(`group  ${group.actions.map((a) => state.names[a]).join(" ")}`);
      lines.push(`R      ${group.rewards.map(g).join(" ")}`);
      lines.push(`Â      ${group.advantages.map(signed).join(" ")}`);
      if (group.ratios !== null) lines.push(`ratio  ${group.ratios.map((r) => fixed(r, 2)).join(" ")}`);
    }
    lines.push(
      SPEC.cards
        .filter(([, key]) => key !== "steps")
        .map(([, key, label, digits]) => `${label.replace("best", state.names[state.best])} ${fmt(state.stats[key], digits)}`)
        .join("  "),
    );
    if (group !== null && Math.max(...group.rewards) === Math.min(...group.rewards)) {
      lines.push("⚠ no signal from this group: std(R) = 0, every Â = 0 (Property 4.1)");
    }
    return lines.join("\n");
  }

  root.GRPOLab = root.GRPOLab || {};
  root.GRPOLab.controller = { create, fixed, fmt, signed, g, phrase, ledgerText, replay, readout, knobValue, knobChanges, klOutcome, seedOf, subsample, CURVE_POINTS };
})(globalThis);
