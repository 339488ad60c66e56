// The page's JavaScript API (web/attograd.js over the WebAssembly module) under node, as CTest
// test `web_api_test` of the wasm build (label `wasm`): the workbench's numbers, training femto
// below the unigram baseline, checkpoints through bytes, gradient checks, and each bad input's
// message. The browser tests (tests/web/browser_test.py) check the same through the page.
//   node --no-experimental-fetch tests/web/api_test.js build-wasm/page
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');

const webDir = path.resolve(process.argv[2] || 'build-wasm/page');
const createAttogradModule = require(path.join(webDir, 'attograd_module.js'));
const {loadAttograd, AttogradError} = require(path.join(webDir, 'attograd.js'));
const text = fs.readFileSync(path.join(webDir, 'genesis.txt'), 'utf8');
const close = (a, b, tol) => Math.abs(a - b) <= tol;

let engine;
test.before(async () => {
  engine = await loadAttograd({factory: createAttogradModule});
});

test('the lecture preset gives 10 and 19.820138, rows summing to 1', () => {
  const r = engine.attention({Q: '1; 2', K: '1; 3', V: '10; 20'});
  assert.deepStrictEqual([r.T, r.d_k, r.d_v], [2, 1, 1]);
  assert.deepStrictEqual(r.scores, [[1, 3], [2, 6]]);
  assert.strictEqual(r.masked[0][1], null);  // -inf above the diagonal
  assert.strictEqual(r.weights[0][1], 0);
  assert.ok(close(r.out[0][0], 10, 1e-12));
  assert.strictEqual(r.out[1][0].toFixed(6), '19.820138');
  r.row_sums.forEach((s) => assert.ok(close(s, 1, 1e-12)));
  assert.deepStrictEqual(r.out_outside_range_of_V, []);
});

test('column softmax: columns sum to 1, rows do not, and Z leaves the range of V', () => {
  const r = engine.attention({Q: '1, 0; 0, 1; 1, 1', K: '1, 0; 0, 1; 1, 1', V: '1, 2; 3, 4; 5, 6',
                              softmax_by: 'column'});
  r.column_sums.forEach((s) => assert.ok(close(s, 1, 1e-12)));
  // docs/03-attention.md's figures (tests/examples/attention_by_hand_test.cc).
  [0.4011121, 0.6977758, 1.9011121].forEach((v, i) => assert.ok(close(r.row_sums[i], v, 1e-7)));
  assert.ok(close(r.out[2][0], 6.9011121, 1e-7) && close(r.out[2][1], 8.8022242, 1e-7));
  // Z[0] = 0.4011121 (1, 2) falls below V's columns' minima (1, 2) and Z[2] above their maxima
  // (5, 6); Z[1] = (1.6977758, 2.3955516) stays inside.
  assert.deepStrictEqual(r.out_outside_range_of_V.map((o) => [o.t, o.c]), [[0, 0], [2, 0], [0, 1], [2, 1]]);
  assert.ok(close(r.out[0][0], 0.4011121, 1e-7) && close(r.out[1][1], 2.3955516, 1e-7));
});

test('without the scale and the mask, every key is seen', () => {
  const r = engine.attention({Q: '1; 2', K: '1; 3', V: '10; 20', scale: false, causal: false});
  assert.deepStrictEqual(r.masked, [[1, 3], [2, 6]]);
  const e = Math.exp(2);  // row 0: softmax(1, 3) = (1, e^2) / (1 + e^2)
  assert.ok(close(r.weights[0][1], e / (1 + e), 1e-12));
});

// A matrix typed one row a line, as in the page's boxes, is the matrix with rows separated by ';'.
test('rows on separate lines are rows', () => {
  const lines = engine.attention({Q: '1, 0\n0, 1\n1, 1', K: '1, 0;\n0, 1;\r\n\n1, 1\n', V: '1, 2\n3, 4\n5, 6'});
  const semicolons = engine.attention({Q: '1, 0; 0, 1; 1, 1', K: '1, 0; 0, 1; 1, 1', V: '1, 2; 3, 4; 5, 6'});
  assert.deepStrictEqual([lines.T, lines.d_k, lines.d_v], [3, 2, 2]);
  assert.deepStrictEqual(lines.out, semicolons.out);
  assert.throws(() => engine.attention({Q: '1, 2\n3', K: '1; 3', V: '10; 20'}),
                (e) => e.message.startsWith('Q: row 2 has 1 number but row 1 has 2; every row needs the same ' +
                                            'count (write rows separated by \';\' or on separate lines'));
});

// A request larger than emscripten's 5 MB stack (a long paste: 2 million blanks before Q's
// numbers) reaches the engine through the heap: it answers it, and every call after (ccall's own
// string argument was copied onto the stack unchecked, and broke the engine until a reload).
test('a request of millions of characters is answered, and the engine keeps working', () => {
  const padded = engine.attention({Q: ' '.repeat(2000000) + '1; 2', K: '1; 3', V: '10; 20'});
  assert.strictEqual(padded.out[1][0].toFixed(6), '19.820138');
  assert.throws(() => engine.forward('a'.repeat(3000000)), (e) => e instanceof AttogradError);
  assert.strictEqual(engine.attention({Q: '1; 2', K: '1; 3', V: '10; 20'}).out[1][0].toFixed(6),
                     '19.820138');
});

// S before the mask may overflow where the mask then hides it: +inf there is "inf", not the
// mask's null (-inf), which the page drew as −∞.
test('an overflowed score is +inf, not the mask\'s -inf', () => {
  const r = engine.attention({Q: '1e200; 1e-200', K: '1; 1e200', V: '1; 2'});
  assert.strictEqual(r.scores[0][1], 'inf');
  assert.strictEqual(r.masked[0][1], null);
  assert.strictEqual(r.out[0][0], 1);
});

// Two heads: split -> attend -> concat. Each head is the one-head attention of its half of the
// columns (scaled by its own sqrt(d_k / 2)), and Z is their outputs side by side.
test('two heads are the one-head attention of each half of the columns, concatenated', () => {
  const two = engine.attention({Q: '1, 0; 0, 1; 1, 1', K: '1, 0; 0, 1; 1, 1', V: '1, 2; 3, 4; 5, 6', heads: 2});
  const halves = [['1; 0; 1', '1; 0; 1', '1; 3; 5'], ['0; 1; 1', '0; 1; 1', '2; 4; 6']].map(
      ([Q, K, V]) => engine.attention({Q, K, V}));
  assert.strictEqual(two.n_head, 2);
  assert.strictEqual(two.heads.length, 2);
  two.heads.forEach((h, i) => {
    assert.deepStrictEqual(h.weights, halves[i].weights);
    assert.deepStrictEqual(h.out, halves[i].out);
  });
  assert.deepStrictEqual(two.out, two.heads[0].out.map((row, t) => row.concat(two.heads[1].out[t])));
  assert.ok(close(two.out[1][1], 3.4621172, 1e-7));  // head 2, query 1: softmax(0, 1) of (2, 4)
  assert.strictEqual(two.scores, undefined);  // the steps are the heads'
  const one = engine.attention({Q: '1, 0; 0, 1; 1, 1', K: '1, 0; 0, 1; 1, 1', V: '1, 2; 3, 4; 5, 6', heads: 1});
  assert.strictEqual(one.heads, undefined);
  assert.throws(() => engine.attention({Q: '1; 2', K: '1; 3', V: '10; 20', heads: 2}),
                (e) => e instanceof AttogradError && /heads is 2, but d_k = 1 and d_v = 1/.test(e.message));
});

// The dial's angles: per pair i, θ_i = 10000^(-2i/d) and the angles m·θ_i, n·θ_i and (m - n)·θ_i
// turned into [0, 2π), read off nn::apply_rope's own rotation.
test('rope gives each channel pair\'s frequency and its angles at m and n', () => {
  const r = engine.rope('1, 0.5, -0.3, 0.8', '0.7, -0.2, 0.4, 0.9', 9, 2);
  const turn = (a) => ((a % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI);
  assert.strictEqual(r.pairs.length, 2);
  r.pairs.forEach((p, i) => {
    const theta = Math.pow(10000, -2 * i / 4);
    assert.ok(close(p.theta, theta, 1e-12));
    assert.ok(close(p.angle_m, turn(9 * theta), 1e-12) && close(p.angle_n, turn(2 * theta), 1e-12));
    assert.ok(close(p.angle_difference, turn(7 * theta), 1e-12));
  });
});

test('a ragged Q is refused with the parser\'s message', () => {
  assert.throws(() => engine.attention({Q: '1, 2; 3', K: '1; 3', V: '10; 20'}),
                (e) => e instanceof AttogradError && /Q/.test(e.message) && /row/.test(e.message));
  assert.throws(() => engine.attention({Q: '1; 2', K: '1; 3; 4', V: '10; 20'}),
                (e) => e instanceof AttogradError && /K/.test(e.message));
});

// femto (n_layer 1, n_head 1, n_embd 2) is the lecture's dimension exercise more than a model:
// a LayerNorm over 2 numbers leaves one bit ((a - b) / |a - b| times gamma, plus beta), so each
// position's output is one of two distributions. In 300 steps it learns the character
// frequencies, from ln V to the unigram, and stays there: on Genesis its val loss is 3.03 to 3.07
// by seed, against a val unigram entropy of 3.031 (the train-counted unigram scores 3.043 on val).
// pico (n_embd 6) uses its context and falls far below the unigram in the same 300 steps.
test('femto learns the unigram in 300 steps; pico falls below it', () => {
  const made = engine.newModel({preset: 'femto', text, max_steps: 300, warmup_steps: 30, seed: 7});
  assert.deepStrictEqual([made.config.n_layer, made.config.n_head, made.config.n_embd], [1, 1, 2]);
  assert.strictEqual(made.config.vocab_size, 70);
  assert.ok(close(made.unigram_loss, 3.0311, 1e-4), `val unigram entropy ${made.unigram_loss}`);
  assert.ok(close(made.bigram_loss, 2.2913, 1e-4), `bigram ${made.bigram_loss}`);
  const first = engine.evaluate();
  assert.ok(close(first.val_loss, Math.log(70), 0.05), `untrained val loss ${first.val_loss}`);
  assert.strictEqual(engine.train(300).losses.length, 300);
  const femto = engine.evaluate();
  assert.strictEqual(femto.step, 300);
  assert.ok(femto.val_loss < made.unigram_loss + 0.05 && femto.val_loss > made.bigram_loss,
            `femto val loss ${femto.val_loss}, unigram ${made.unigram_loss}`);

  const pico = engine.newModel({preset: 'pico', text, max_steps: 300, warmup_steps: 30, seed: 7});
  engine.train(300);
  const picoEval = engine.evaluate();
  assert.ok(picoEval.val_loss < pico.unigram_loss - 0.3,
            `pico val loss ${picoEval.val_loss} should fall below the unigram ${pico.unigram_loss}`);
});

// The page takes every option of `attograd train` under its JSON name (TrainOptions' table), with
// the CLI's defaults and ranges.
test('model_new takes the training options of attograd train', () => {
  const made = engine.newModel({preset: 'femto', text, max_steps: 10, beta2: 0.99, label_smoothing: 0.1});
  assert.strictEqual(made.options.beta2, 0.99);
  assert.strictEqual(made.options.label_smoothing, 0.1);
  // An enum option by its name, as the answer writes it back.
  const bf16 = engine.newModel({preset: 'femto', text, max_steps: 10, mixed_precision: 'bf16'});
  assert.strictEqual(bf16.options.mixed_precision, 'bf16');
  assert.throws(() => engine.newModel({preset: 'femto', text, mixed_precision: 'bf15'}),
                /mixed_precision \(--mixed-precision\) is "bf15", expected f32 or bf16/);
  assert.strictEqual(made.options.max_steps, 10);
  assert.strictEqual(made.options.batch_size, 32);  // the default, as the CLI's
  assert.throws(() => engine.newModel({preset: 'femto', text, label_smoothing: 1}),
                /request 'model_new': label_smoothing \(--label-smoothing\) is 1, expected a finite number in \[0, 1\)/);
});

// The evaluation schedule of `attograd train` (TrainOptions::next_eval), which the page's worker
// trains by: train_pico.sh's shape (every eval_early steps, then every eval_interval), small.
test('train and evaluate answer the step of the next evaluation by the run\'s schedule', () => {
  engine.newModel({preset: 'femto', text, max_steps: 50, warmup_steps: 5, eval_interval: 20,
                   eval_early: 5, eval_iters: 2});
  let next = engine.evaluate().next_eval, step = 0;
  const seen = [];
  while (next !== 0 && next <= 50) {
    const r = engine.train(next - step);
    assert.strictEqual(r.step, next);
    seen.push(next);
    step = next;
    next = r.next_eval;
  }
  assert.deepStrictEqual(seen, [5, 10, 15, 20, 40, 50]);
  assert.strictEqual(next, 60);  // past max_steps (Steps raised in the page): every eval_interval
  assert.strictEqual(engine.evaluate().next_eval, 60);
});

// The homework's command, examples/train_pico.sh (copied beside the page), through the engine's
// table of `attograd train`'s flags (info's train_flags): each training option it sets reaches
// model_new under its JSON name, and the engine trains with the script's values.
test('train_pico.sh\'s training flags name options model_new takes, with the script\'s values', () => {
  const script = fs.readFileSync(path.join(webDir, 'examples', 'train_pico.sh'), 'utf8');
  const command = script.replace(/\\\n/g, ' ').split('\n').find((l) => /attograd train /.test(l));
  const words = command.trim().split(/\s+/);
  const flags = engine.info().train_flags;
  assert.strictEqual(flags['--lr'], 'learning_rate');
  assert.strictEqual(flags['--steps'], 'max_steps');
  const request = {}, expected = {};
  for (let i = 0; i < words.length; ++i) {
    if (!flags[words[i]]) continue;
    const key = flags[words[i]], value = Number(words[i + 1]);
    request[key] = value;
    expected[key] = value;
  }
  assert.deepStrictEqual(Object.keys(expected).sort(),
                         ['batch_size', 'eval_early', 'eval_interval', 'eval_iters', 'learning_rate',
                          'log_interval', 'max_steps', 'min_lr', 'warmup_steps']);
  const made = engine.newModel(Object.assign({preset: 'pico', text}, request));
  for (const [key, value] of Object.entries(expected)) assert.strictEqual(made.options[key], value, key);
  assert.strictEqual(made.options.eval_early, 100);
  assert.strictEqual(made.options.max_steps, 20000);
});

// The bigram and the average at pico's size (the page's choice for them): the average has pico's
// n_embd 6, the lecture's averaging-against-attention comparison at one width.
test('the average built at pico\'s size has n_embd 6', () => {
  const average = engine.newModel({kind: 'average', preset: 'pico', text, max_steps: 10});
  assert.strictEqual(average.config.n_embd, 6);
  const bigram = engine.newModel({kind: 'bigram', preset: 'pico', text, max_steps: 10});
  assert.strictEqual(bigram.config.kind, 'bigram');
  assert.strictEqual(bigram.config.parameters, 70 * 70);
});

test('forward, checkpoints through bytes, sampling, and their bad inputs', () => {
  engine.newModel({preset: 'pico', text, max_steps: 100, warmup_steps: 10, seed: 3});
  engine.train(100);
  const before = engine.forward('In the');
  assert.deepStrictEqual(before.tokens, ['I', 'n', ' ', 't', 'h', 'e']);
  assert.strictEqual(before.attention.length, 3);  // 3 layers of 3 heads, each (T, T)
  for (const heads of before.attention) {
    assert.strictEqual(heads.length, 3);
    for (const A of heads) {
      A.forEach((row, q) => {
        assert.ok(close(row.reduce((a, b) => a + b, 0), 1, 1e-6));
        row.forEach((w, k) => k > q && assert.strictEqual(w, 0));
      });
    }
  }
  assert.ok(close(before.next_token_probabilities.reduce((a, b) => a + b, 0), 1, 1e-9));
  const bytes = engine.saveCheckpoint();
  assert.ok(bytes.length > 2028 * 4, `${bytes.length} bytes`);
  const loaded = engine.loadCheckpoint(bytes);
  assert.strictEqual(loaded.config.parameters, 2028 + 70 * 6 - 73 * 6);  // V = 70 here, 73 in the docs
  const after = engine.forward('In the');
  assert.deepStrictEqual(after.next_token_probabilities, before.next_token_probabilities);

  assert.throws(() => engine.loadCheckpoint(bytes.slice(0, Math.floor(bytes.length / 2))),
                (e) => e instanceof AttogradError && /^safetensors file .*ckpt.safetensors.: truncated: /.test(e.message));
  assert.throws(() => engine.forward('x'.repeat(9)),
                (e) => /longer than this model's context \(block_size 8\)/.test(e.message));
  // A character the model has never seen is named, not dropped.
  assert.throws(() => engine.forward('In the €'), (e) => e instanceof AttogradError && /€|U\+20AC/.test(e.message));

  // Sampling: the same seed gives the same text; each step's bars are the most likely tokens
  // after temperature and top-k, so with top_k 10 and 12 bars the last two are 0 and the ten
  // others sum to 1.
  const a = engine.sample({prompt: 'And', max_new_tokens: 40, temperature: 0.8, top_k: 10, seed: 3, bars: 12});
  const b = engine.sample({prompt: 'And', max_new_tokens: 40, temperature: 0.8, top_k: 10, seed: 3, bars: 12});
  assert.strictEqual(a.text, b.text);
  assert.strictEqual([...a.text].length, 40);
  assert.strictEqual(a.steps.length, 40);
  for (const bars of a.steps) {
    assert.strictEqual(bars.length, 12);
    assert.ok(close(bars.slice(0, 10).reduce((s, x) => s + x.p, 0), 1, 1e-9));
    assert.deepStrictEqual(bars.slice(10).map((x) => x.p), [0, 0]);
    bars.slice(1).forEach((x, i) => assert.ok(x.p <= bars[i].p));
  }
  // Each step's drawn token is the text's next character, with its probability and rank in the
  // bars' order; the bars, the drawn token when outside them (top-k off: it may be) and the rest
  // sum to 1, the rest's count being the tokens neither shown nor drawn.
  const V = engine.forward('In').next_token_probabilities.length;
  const c = engine.sample({prompt: 'And God said', max_new_tokens: 60, temperature: 1.3, seed: 4, bars: 3});
  assert.strictEqual(c.chosen.map((x) => x.token).join(''), c.text);
  let outside = 0;
  c.steps.forEach((bars, k) => {
    const {p, rank} = c.chosen[k], out = rank >= bars.length;
    outside += out;
    if (!out) assert.deepStrictEqual(bars[rank], {token: c.chosen[k].token, p});
    assert.ok(out ? p <= bars[bars.length - 1].p : true);
    assert.ok(close(bars.reduce((s, x) => s + x.p, 0) + (out ? p : 0) + c.rest[k].p, 1, 1e-9), `step ${k}`);
    assert.strictEqual(c.rest[k].tokens, V - bars.length - (out ? 1 : 0));
  });
  assert.ok(outside > 0 && outside < 60, `${outside} of 60 drawn tokens outside the 3 bars`);
  // One token a request (the page's way, the prompt growing), seeded at the first: the same text
  // and the same bars as one request for all of them.
  const settings = {temperature: 0.8, top_p: 0.9, bars: 5};
  let grown = '';
  const oneByOne = [];
  for (let k = 0; k < 20; ++k) {
    const r = engine.sample(Object.assign({prompt: 'And God said' + grown, max_new_tokens: 1}, settings,
                                          k === 0 ? {seed: 9} : {}));
    oneByOne.push([r.steps[0], r.chosen[0], r.rest[0]]);
    grown += r.text;
  }
  const all = engine.sample(Object.assign({prompt: 'And God said', max_new_tokens: 20, seed: 9}, settings));
  assert.strictEqual(grown, all.text);
  assert.deepStrictEqual(oneByOne, all.steps.map((bars, k) => [bars, all.chosen[k], all.rest[k]]));
  // Numbers JSON cannot carry are refused (JSON.stringify would send null, and the engine would
  // sample at its default temperature 1), naming the field.
  for (const t of [Infinity, NaN, -Infinity])
    assert.throws(() => engine.sample({prompt: 'And', max_new_tokens: 4, temperature: t}),
                  (e) => e instanceof AttogradError &&
                      e.message === `sample: temperature is ${t}: give a finite number (JSON, which ` +
                          'carries requests to the engine, has no Infinity or NaN)');
  assert.throws(() => engine.newModel({preset: 'femto', text, learning_rate: NaN}),
                (e) => e instanceof AttogradError && e.message.startsWith('model_new: learning_rate is NaN: '));
});

// "Attention is not explanation" (gpt/model/attribution.h) in the forward request: one row per
// (query, layer, head) for the queries 1 .. T-2, whose most-attended key is the argmax of the
// attention row the same request returns. tests/web/parity_test.js compares the rows with the
// native CLI's `attograd attention --attribution`.
test('forward returns the attribution rows, consistent with its attention maps', () => {
  engine.newModel({preset: 'pico', text, max_steps: 100, warmup_steps: 10, seed: 3});
  engine.train(100);
  const r = engine.forward('In the');
  const T = r.tokens.length, layers = r.attention.length, heads = r.attention[0].length;
  const a = r.attribution;
  assert.strictEqual(a.reason, null);
  assert.strictEqual(a.rows.length, (T - 2) * layers * heads);  // 4 x 3 x 3
  assert.strictEqual(a.rows.length, 36);
  let i = 0, differ = 0;
  for (let query = 1; query <= T - 2; ++query) {
    for (let layer = 0; layer < layers; ++layer) {
      for (let head = 0; head < heads; ++head) {
        const row = a.rows[i++];
        assert.deepStrictEqual([row.layer, row.head, row.query], [layer, head, query]);
        const A = r.attention[layer][head][query];
        const argmax = A.reduce((best, w, k) => (w > A[best] ? k : best), 0);  // the first on a tie
        assert.strictEqual(row.most_attended, argmax, `layer ${layer} head ${head} query ${query}`);
        assert.strictEqual(row.weight, A[argmax]);
        assert.ok(row.largest_change >= 0 && row.largest_change <= query);
        assert.ok(Number.isFinite(row.change) && row.change !== 0);
        assert.strictEqual(row.differ, row.most_attended !== row.largest_change);
        differ += row.differ;
      }
    }
  }
  assert.strictEqual(a.differ, differ);

  // The backward passes leave training as it was: the next steps' losses are those of a twin
  // model that was not looked into.
  const next = engine.train(5).losses;
  engine.newModel({preset: 'pico', text, max_steps: 100, warmup_steps: 10, seed: 3});
  engine.train(100);
  assert.deepStrictEqual(engine.train(5).losses, next);

  // No rows, and the reason, for a prompt under 3 tokens and for a model without attention.
  const short = engine.forward('In').attribution;
  assert.deepStrictEqual([short.rows, short.differ], [[], 0]);
  assert.match(short.reason, /the prompt has 2 token\(s\): the comparison needs at least 3/);
  engine.newModel({kind: 'bigram', text, max_steps: 10});
  const bigram = engine.forward('In the');
  assert.deepStrictEqual([bigram.attention, bigram.attribution.rows], [[], []]);
  assert.match(bigram.attribution.reason, /this model has no attention \(bigram\)/);
});

test('a non-UTF-8 file is refused naming the file, the byte offset and the fix', () => {
  const bytes = Buffer.concat([Buffer.from('In the beginning'), Buffer.from([0xff, 0xfe]), Buffer.from(' x')]);
  assert.throws(() => engine.newModelFromBytes(new Uint8Array(bytes), {preset: 'femto'}, 'latin1.txt'),
                (e) => e.message.startsWith('latin1.txt is not UTF-8 text: invalid UTF-8 at byte offset 16') &&
                       /save it as UTF-8/.test(e.message));
  // A truncated checkpoint names the file it came from, not a path inside the module.
  engine.newModel({preset: 'femto', text, max_steps: 10});
  const ckpt = engine.saveCheckpoint();
  assert.throws(() => engine.loadCheckpoint(ckpt.slice(0, 100), 'mine.safetensors'),
                (e) => /mine\.safetensors/.test(e.message) && /truncated/.test(e.message));
});

// A chosen file is read as attograd train --corpus reads one (gpt::normalize_user_text): the
// same text with a byte order mark and Windows line ends is the same model's text, not V + 2.
test('a file with a byte order mark and CRLF line ends reads as its LF text', () => {
  const lf = engine.newModel({preset: 'femto', text, max_steps: 10});
  const windows = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text.replace(/\n/g, '\r\n'))]);
  const crlf = engine.newModelFromBytes(new Uint8Array(windows), {preset: 'femto', max_steps: 10}, 'windows.txt');
  assert.strictEqual(lf.config.vocab_size, 70);
  assert.strictEqual(crlf.config.vocab_size, 70);
  assert.deepStrictEqual([crlf.train_tokens, crlf.val_tokens, crlf.unigram_loss, crlf.bigram_loss],
                         [lf.train_tokens, lf.val_tokens, lf.unigram_loss, lf.bigram_loss]);
  assert.strictEqual(crlf.line_ends_made_lf, text.split('\n').length - 1);
  assert.strictEqual(lf.line_ends_made_lf, 0);
});

// The review's cases: every message in the page's words, no CLI flag or C++ name.
test('overflow, divergence, an unknown character and the model line are said in the page\'s words', () => {
  assert.throws(() => engine.rope('1e200, 0', '1e200, 0', 0, 0),
                (e) => e.message === 'the score q·k overflowed to a non-finite number: use smaller values in q or k');
  engine.newModel({preset: 'pico', text, max_steps: 50, learning_rate: 1e30, warmup_steps: 1});
  assert.throws(() => engine.train(50),
                (e) => /^the (training loss|gradient norm) became .* at step \d+; stopped before updating the parameters\. Lower the learning rate \(part 3's learning rate box, e\.g\. to a tenth\) and press Build to start a new model with it$/.test(e.message) &&
                       !/--lr|--grad-clip/.test(e.message));
  assert.throws(() => engine.forward('In th@'),
                (e) => e.message === 'character 6 of the prompt, \'@\' (U+0040), is not in this model\'s text: a ' +
                                     'character model knows only the characters of the text it was trained on. ' +
                                     'Remove it from the prompt');
  assert.throws(() => engine.sample({prompt: 'A€', max_new_tokens: 1}),
                (e) => /^character 2 of the prompt, '€' \(U\+20AC\), is not in this model's text/.test(e.message));
  // Only the settings each kind of model has.
  const keys = (kind) => Object.keys(engine.newModel({kind, text, max_steps: 10}).config).sort();
  assert.deepStrictEqual(keys('bigram'), ['block_size', 'kind', 'parameters', 'vocab_size']);
  assert.deepStrictEqual(keys('average'), ['bias', 'block_size', 'kind', 'n_embd', 'parameters', 'pos_encoding',
                                           'vocab_size']);
  assert.deepStrictEqual(keys('gpt'), ['bias', 'block_size', 'dropout', 'kind', 'n_embd', 'n_head', 'n_layer',
                                       'parameters', 'pos_encoding', 'vocab_size']);
});

test('gradient checks pass for softmax and layer_norm in f64', () => {
  const names = engine.ops().map((o) => o.name);
  for (const op of ['softmax', 'layer_norm', 'matmul']) {
    assert.ok(names.includes(op));
    const r = engine.gradcheck(op, 'f64');
    assert.ok(r.cases.length > 0);
    for (const c of r.cases) {
      assert.ok(c.passed, `${op} ${c.label}: ${c.message}`);
      c.inputs.forEach((i) => assert.ok(i.max_abs_err <= r.atol + 1e-3));
    }
  }
  assert.throws(() => engine.gradcheck('no_such_op'), /unknown op/);
});
