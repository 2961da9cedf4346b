/* GRPO Companion, the §11 bandit lab: the engine that runs in the page.
 *
 * A dependency-free port of grpo_core.bandit (BanditGRPO, grpo_step,
 * objective_gradient: the hand-derived gradient of eq. 9 with eq. 3 and its
 * RLOO / Dr. GRPO variants, the clip masks of eq. 7 and k3 of eq. 8) and of
 * NumPy's np.random.default_rng(seed): SeedSequence -> PCG64 (XSL-RR 128/64),
 * Generator.random() doubles and Generator.choice(n, size, p=p) (cumsum,
 * normalised by its last entry, searchsorted side="right"). Sums follow
 * NumPy's add.reduce (the pairwise sum of numpy/_core/src/umath/loops_utils.h) and
 * every other operation keeps grpo_core's order, so the same seed gives the
 * same run. Python's numeric guards are ported with it: every log-ratio is
 * clamped to ±LOG_RATIO_BOUND before it is exponentiated, and beyond the bound
 * the surrogate and the k3 term contribute nothing (grpo_core.bandit.grpo.
 * _objective_gradient); an inner epoch that leaves the logits' spread not
 * finite, or a step that leaves a logit not finite, throws Diverged with
 * Python's message and leaves θ as it was (BanditTrainer.step); log π of logits
 * whose spread overflows is refused (grpo_core.bandit.env.log_softmax).
 * tests/browser/test_lab_parity.py checks it against BanditGRPO over the sliders' whole range.
 * Seeds are BigInt (or decimal strings), 0 to 2**64 - 1, as NumPy takes them.
 * Reads GRPOLab.spec (lab-spec.js, generated from grpo_core.lab.spec): the
 * defaults of GRPOConfig and the bound. Classic script: defines globalThis.GRPOLab.engine.
 */
(function (root) {
  "use strict";

  const SPEC = root.GRPOLab && root.GRPOLab.spec;
  if (!SPEC) throw new Error("lab-spec.js (grpo_core.lab.spec) must be loaded before lab-engine.js");
  const LOG_RATIO_BOUND = SPEC.guards.log_ratio_bound;
  const MAX_SEED = BigInt(SPEC.limits.max_seed);

  /** What grpo_core.bandit.Diverged says: an update left the logits, or their gradient, not finite. */
  class Diverged extends Error {
    constructor(message) {
      super(message);
      this.name = "Diverged";
    }
  }

  /** A seed as NumPy takes it from the lab: an integer 0 to 2**64 - 1 (BigInt, a safe integer or its decimal
   * string), as BigInt; anything else throws a RangeError naming it (grpo_core._validate.seed_value). */
  function seedValue(seed) {
    let value = null;
    if (typeof seed === "bigint") value = seed;
    else if (typeof seed === "number" && Number.isSafeInteger(seed)) value = BigInt(seed);
    else if (typeof seed === "string" && /^[0-9]+$/.test(seed.trim())) value = BigInt(seed.trim());
    if (value === null || value < 0n || value > MAX_SEED) {
      throw new RangeError(`seed must be an integer from 0 to ${MAX_SEED}, got ${String(seed)}`);
    }
    return value;
  }

  // ---- NumPy's SeedSequence (numpy/random/bit_generator.pyx), uint32 arithmetic ----
  const INIT_A = 0x43b0d7e5, MULT_A = 0x931e8875, INIT_B = 0x8b51f9dd, MULT_B = 0x58f38ded;
  const MIX_MULT_L = 0xca01f9dd, MIX_MULT_R = 0x4973f715, XSHIFT = 16, POOL_SIZE = 4;

  function seedWords(seed) {
    let n = seedValue(seed);
    const words = [];
    do {
      words.push(Number(n & 0xffffffffn));
      n >>= 32n;
    } while (n > 0n);
    return words;
  }

  function seedSequenceState(seed, nWords32) {
    const entropy = seedWords(seed);
    let hashConst = INIT_A;
    const hashmix = (value) => {
      value = (value ^ hashConst) >>> 0;
      hashConst = Math.imul(hashConst, MULT_A) >>> 0;
      value = Math.imul(value, hashConst) >>> 0;
      return (value ^ (value >>> XSHIFT)) >>> 0;
    };
    const mix = (x, y) => {
      const result = (Math.imul(MIX_MULT_L, x) - Math.imul(MIX_MULT_R, y)) >>> 0;
      return (result ^ (result >>> XSHIFT)) >>> 0;
    };
    const pool = [];
    for (let i = 0; i < POOL_SIZE; i++) pool.push(hashmix(i < entropy.length ? entropy[i] : 0));
    for (let src = 0; src < POOL_SIZE; src++) {
      for (let dst = 0; dst < POOL_SIZE; dst++) {
        if (src !== dst) pool[dst] = mix(pool[dst], hashmix(pool[src]));
      }
    }
    for (let src = POOL_SIZE; src < entropy.length; src++) {
      for (let dst = 0; dst < POOL_SIZE; dst++) pool[dst] = mix(pool[dst], hashmix(entropy[src]));
    }
    let constB = INIT_B;
    const out = [];
    for (let i = 0; i < nWords32; i++) {
      let value = (pool[i % POOL_SIZE] ^ constB) >>> 0;
      constB = Math.imul(constB, MULT_B) >>> 0;
      value = Math.imul(value, constB) >>> 0;
      out.push((value ^ (value >>> XSHIFT)) >>> 0);
    }
    return out;
  }

  // ---- PCG64 (numpy/random/src/pcg64), 128-bit state in BigInt ----
  const MASK128 = (1n << 128n) - 1n;
  const MASK64 = (1n << 64n) - 1n;
  const PCG_MULT = (2549297995355413924n << 64n) + 4865540595714422341n;
  const TWO_POW_M53 = 1 / 9007199254740992;

  class PCG64 {
    constructor(seed) {
      const w = seedSequenceState(seed, 8); // generate_state(4, uint64): little-endian pairs
      const u64 = (k) => BigInt(w[2 * k]) | (BigInt(w[2 * k + 1]) << 32n);
      const initState = (u64(0) << 64n) | u64(1);
      const initSeq = (u64(2) << 64n) | u64(3);
      this.state = 0n;
      this.inc = ((initSeq << 1n) | 1n) & MASK128;
      this.step();
      this.state = (this.state + initState) & MASK128;
      this.step();
    }
    step() {
      this.state = (this.state * PCG_MULT + this.inc) & MASK128;
    }
    next64() {
      this.step();
      const s = this.state;
      const x = ((s >> 64n) ^ s) & MASK64;
      const rot = s >> 122n;
      return ((x >> rot) | (x << ((64n - rot) & 63n))) & MASK64;
    }
    /** Generator.random(): a double in [0, 1) with 53 random bits. */
    random() {
      return Number(this.next64() >> 11n) * TWO_POW_M53;
    }
  }

  // ---- NumPy's float64 reductions ----
  function pairwiseSum(a, start, n) {
    if (n < 8) {
      let res = -0.0;
      for (let i = 0; i < n; i++) res += a[start + i];
      return res;
    }
    if (n <= 128) {
      const r = a.slice(start, start + 8);
      let i = 8;
      for (; i < n - (n % 8); i += 8) {
        for (let j = 0; j < 8; j++) r[j] += a[start + i + j];
      }
      let res = r[0] + r[1] + (r[2] + r[3]) + (r[4] + r[5] + (r[6] + r[7]));
      for (; i < n; i++) res += a[start + i];
      return res;
    }
    let half = Math.floor(n / 2);
    half -= half % 8;
    return pairwiseSum(a, start, half) + pairwiseSum(a, start + half, n - half);
  }

  /** np.sum of a 1-D float64 array (NumPy 2: the pairwise sum of all of it). */
  function npSum(a) {
    return pairwiseSum(a, 0, a.length);
  }

  const npMean = (a) => npSum(a) / a.length;

  function npStd(a) {
    const mean = npMean(a);
    return Math.sqrt(npSum(a.map((x) => (x - mean) * (x - mean))) / a.length);
  }

  const sameValues = (a) => Math.max(...a) === Math.min(...a);

  // ---- the bandit (grpo_core.bandit) ----
  /** log π (grpo_core.bandit.env.log_softmax), refusing logits whose spread overflows (log π would be -inf). */
  function logSoftmax(logits, name = "logits") {
    const max = Math.max(...logits);
    const shifted = logits.map((x) => x - max);
    if (!shifted.every(Number.isFinite)) {
      throw new RangeError(`${name}: log π overflows float64, the spread max - min of the logits exceeds 1.8e308`);
    }
    const lse = Math.log(npSum(shifted.map(Math.exp)));
    return shifted.map((x) => x - lse);
  }

  /** Eq. (6) as grpo_core.clipping._ratio: exp of the log-ratio clamped to ±LOG_RATIO_BOUND. */
  const ratioOf = (logp, oldLogp) => Math.exp(Math.min(Math.max(logp - oldLogp, -LOG_RATIO_BOUND), LOG_RATIO_BOUND));
  const beyondBound = (top, bottom) => Math.abs(top - bottom) > LOG_RATIO_BOUND;

  function softmax(logits) {
    const max = Math.max(...logits);
    const e = logits.map((x) => Math.exp(x - max));
    const total = npSum(e);
    return e.map((x) => x / total);
  }

  /** Eq. (3) and the §8 variants for one group (grpo_core.advantages). */
  function advantages(rewards, variant, advEps) {
    const n = rewards.length;
    if (sameValues(rewards)) return rewards.map(() => 0); // Property 4.1, exactly
    if (variant === "rloo") {
      const total = npSum(rewards);
      return rewards.map((r) => r - (total - r) / (n - 1));
    }
    const mean = npMean(rewards);
    const centered = rewards.map((r) => r - mean);
    if (variant === "dr_grpo") return centered;
    const denominator = npStd(rewards) + advEps;
    return centered.map((c) => (denominator > 0 ? c / denominator : 0));
  }

  function clipMasks(ratios, adv, epsLow, epsHigh) {
    const low = 1.0 - epsLow;
    const high = 1.0 + (epsHigh === null || epsHigh === undefined ? epsLow : epsHigh);
    return ratios.map((r, i) => (r < low && adv[i] < 0) || (r > high && adv[i] > 0));
  }

  /** ∇θ of eq. (9) for the softmax bandit (grpo_core.bandit.grpo._objective_gradient): beyond the log-ratio
   * bound the surrogate's and the k3 term's factors are constants and contribute no gradient. */
  function objectiveGradient(theta, actions, oldLogp, refLogp, adv, config) {
    const logProbs = logSoftmax(theta);
    const probs = logProbs.map(Math.exp);
    const logp = actions.map((a) => logProbs[a]);
    const ratio = logp.map((l, i) => ratioOf(l, oldLogp[i]));
    const clipped = clipMasks(ratio, adv, config.eps_low, config.eps_high);
    const coef = logp.map((l, i) => {
      const surrogate = clipped[i] || beyondBound(l, oldLogp[i]) ? 0.0 : adv[i] * ratio[i];
      const kl = beyondBound(refLogp[i], l) ? 0.0 : 1.0 - ratioOf(refLogp[i], l);
      return surrogate - config.beta * kl;
    });
    const counts = probs.map(() => 0.0);
    actions.forEach((a, i) => {
      counts[a] += coef[i];
    });
    const total = npSum(coef);
    const grad = counts.map((c, k) => (c - probs[k] * total) / actions.length);
    if (!grad.every(Number.isFinite)) {
      throw new Diverged(
        "the gradient overflowed the float range: the advantages (set by the rewards, and by PPO's value_init) " +
          "or beta are too large",
      );
    }
    return grad;
  }

  /** Exact KL(p‖q) and H(p) (grpo_core.kl), 0 log 0 = 0. */
  function categoricalKl(p, q) {
    return Math.max(npSum(p.map((pi, k) => (pi > 0 ? pi * (Math.log(pi) - Math.log(q[k])) : 0.0))), 0.0);
  }

  function entropy(p) {
    return -npSum(p.map((pi) => (pi > 0 ? pi * Math.log(pi) : 0.0)));
  }

  function stateValue(p, table) {
    return npSum(p.map((pi, k) => pi * table[k]));
  }

  /** One GRPO iteration (§7) on one group (grpo_core.bandit.grpo_step). */
  function grpoStep(logits, refLogits, actions, rewards, config) {
    const oldLogProbs = logSoftmax(logits);
    const refLogProbs = logSoftmax(refLogits, "ref_logits");
    const adv = advantages(rewards, config.advantage, config.adv_eps);
    const oldLogp = actions.map((a) => oldLogProbs[a]);
    const refLogp = actions.map((a) => refLogProbs[a]);
    const theta = logits.slice();
    for (let epoch = 0; epoch < config.inner_epochs; epoch++) {
      const grad = objectiveGradient(theta, actions, oldLogp, refLogp, adv, config);
      for (let k = 0; k < theta.length; k++) theta[k] += config.lr * grad[k];
      if (!Number.isFinite(Math.max(...theta) - Math.min(...theta))) {
        throw new Diverged(`config.lr = ${pyFloat(config.lr)} made the logits overflow at inner epoch ${epoch}: lower lr`);
      }
    }
    const logProbs = logSoftmax(theta);
    const ratios = actions.map((a, i) => ratioOf(logProbs[a], oldLogp[i]));
    const clipped = clipMasks(ratios, adv, config.eps_low, config.eps_high);
    const probs = logProbs.map(Math.exp);
    const refProbs = refLogProbs.map(Math.exp);
    return {
      oldProbs: oldLogProbs.map(Math.exp),
      actions,
      rewards,
      advantages: adv,
      ratios,
      clipped,
      probs,
      refProbs,
      logits: theta,
      zeroVariance: sameValues(rewards),
      rewardMean: npMean(rewards),
      rewardStd: npStd(rewards),
      clipFraction: clipped.filter(Boolean).length / clipped.length,
      kl: categoricalKl(probs, refProbs),
      entropy: entropy(probs),
    };
  }

  const DEFAULT_CONFIG = SPEC.defaults;

  /** A float as Python code reads it back exactly: Python's repr for an integral value ("1.0"), else the
   * shortest round-trip decimal, as Python's repr (JavaScript writes 1e-7 where Python writes 1e-07). */
  const pyFloat = (x) => (Number.isInteger(x) && Math.abs(x) < 1e16 ? x.toFixed(1) : String(x));

  /** The run under the lab (grpo_core.bandit.BanditGRPO): θ, π_ref, the seeded generator, the pending group. */
  class BanditGRPO {
    constructor({ rewards = SPEC.rewards, config = {}, seed = 0, initLogits = null } = {}) {
      this.rewardTable = rewards.slice();
      this.initLogits = initLogits ? initLogits.slice() : rewards.map(() => 0.0);
      this.config = { ...DEFAULT_CONFIG, ...config };
      this.seed = seedValue(seed);
      this.reset();
    }
    reset(seed) {
      if (seed !== undefined && seed !== null) this.seed = seedValue(seed);
      this.logits = this.initLogits.slice();
      this.refLogits = this.logits.slice();
      this.rng = new PCG64(this.seed);
      this.samplesDrawn = 0;
      this.history = [];
      this.pending = null;
    }
    get probs() {
      return softmax(this.logits);
    }
    get refProbs() {
      return softmax(this.refLogits);
    }
    configure(changes) {
      this.config = { ...this.config, ...changes };
    }
    setPolicy(probs) {
      this.logits = probs.map(Math.log);
      this.pending = null;
    }
    /** Eq. (1): Generator.choice(K, size=G, p=π / sum(π)). */
    draw(count) {
      const probs = this.probs;
      const total = npSum(probs);
      const cdf = [];
      let running = 0.0;
      for (const p of probs) {
        running += p / total;
        cdf.push(running);
      }
      const last = cdf[cdf.length - 1];
      const normalised = cdf.map((c) => c / last);
      const actions = [];
      for (let i = 0; i < count; i++) {
        const u = this.rng.random();
        let k = 0;
        while (k < normalised.length && normalised[k] <= u) k++;
        actions.push(k);
      }
      this.samplesDrawn += count;
      return actions;
    }
    rewardOf(actions) {
      return actions.map((a) => this.rewardTable[a]);
    }
    sample() {
      this.pending = this.draw(this.config.group_size);
      return { actions: this.pending, rewards: this.rewardOf(this.pending) };
    }
    /** One update (BanditTrainer.step): a step that overflows throws Diverged naming it, θ left as it was. */
    step() {
      if (this.pending === null) this.sample();
      const actions = this.pending;
      this.pending = null;
      let result;
      try {
        result = grpoStep(this.logits, this.refLogits, actions, this.rewardOf(actions), this.config);
      } catch (error) {
        if (error instanceof Diverged) throw new Diverged(`step ${this.history.length + 1}: ${error.message}`);
        throw error;
      }
      if (!Number.isFinite(Math.max(...result.logits) - Math.min(...result.logits))) throw this.diverged();
      this.logits = result.logits;
      this.history.push(result);
      return result;
    }
    /** The Diverged of a step that left the logits' spread not finite. */
    diverged() {
      const lr = this.config.lr;
      return new Diverged(
        `step ${this.history.length + 1}: the update overflowed the logits (lr=${pyFloat(lr)} is likely too large; ` +
          `try lr <= ${Number((lr / 10).toPrecision(6))})`, // Python's :g for 0.005 <= lr / 10 <= 0.4,
      );
    }
  }

  root.GRPOLab = root.GRPOLab || {};
  root.GRPOLab.engine = {
    PCG64,
    BanditGRPO,
    Diverged,
    seedValue,
    pyFloat,
    LOG_RATIO_BOUND,
    grpoStep,
    advantages,
    softmax,
    logSoftmax,
    categoricalKl,
    entropy,
    stateValue,
    npSum,
    npMean,
    npStd,
    DEFAULT_CONFIG,
  };
})(globalThis);
