// The page's JavaScript API (web/attograd.js over the WebAssembly module) under node, as CTest
// test `web_api_test` of the wasm build (label `wasm`): the workbench's numbers, training femto
// below the unigram baseline, checkpoints through bytes, gradient checks, and each bad input's
// message. The browser tests (tests/web/browser_test.py) check the same through the page.
//   node --no-experimental-fetch tests/web/api_test.js build-wasm/web
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');

const webDir = path.resolve(process.argv[2] || 'build-wasm/web');
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
  assert.deepStrictEqual(r.out_outside_range_of_V.map((o) => [o.t, o.c]), [[2, 0], [2, 1]]);
});

test('without the scale and the mask, every key is seen', () => {
  const r = engine.attention({Q: '1; 2', K: '1; 3', V: '10; 20', scale: false, causal: false});
  assert.deepStrictEqual(r.masked, [[1, 3], [2, 6]]);
  const e = Math.exp(2);  // row 0: softmax(1, 3) = (1, e^2) / (1 + e^2)
  assert.ok(close(r.weights[0][1], e / (1 + e), 1e-12));
});

test('a ragged Q is refused with the parser\'s message', () => {
  assert.throws(() => engine.attention({Q: '1, 2; 3', K: '1; 3', V: '10; 20'}),
                (e) => e instanceof AttogradError && /Q/.test(e.message) && /row/.test(e.message));
  assert.throws(() => engine.attention({Q: '1; 2', K: '1; 3; 4', V: '10; 20'}),
                (e) => e instanceof AttogradError && /K/.test(e.message));
});

test('femto trains 300 steps below the unigram baseline; checkpoints round-trip', () => {
  const made = engine.newModel({preset: 'femto', text, max_steps: 300, warmup_steps: 30, seed: 7});
  assert.strictEqual(made.config.n_embd, 2);
  assert.strictEqual(made.config.n_head, 1);
  assert.ok(made.bigram_loss < made.unigram_loss);
  const first = engine.evaluate();
  const losses = engine.train(300).losses;
  assert.strictEqual(losses.length, 300);
  const last = engine.evaluate();
  assert.strictEqual(last.step, 300);
  assert.ok(last.val_loss < first.val_loss - 0.5, `val ${first.val_loss} -> ${last.val_loss}`);
  assert.ok(last.val_loss < made.unigram_loss,
            `val loss ${last.val_loss} should fall below the unigram ${made.unigram_loss}`);

  const before = engine.forward('In the');
  assert.strictEqual(before.attention.length, 1);  // one layer, one head, (T, T)
  const A = before.attention[0][0];
  A.forEach((row, q) => {
    assert.ok(close(row.reduce((a, b) => a + b, 0), 1, 1e-6));
    row.forEach((w, k) => k > q && assert.strictEqual(w, 0));
  });
  const bytes = engine.saveCheckpoint();
  assert.ok(bytes.length > 1000);
  const loaded = engine.loadCheckpoint(bytes);
  assert.strictEqual(loaded.config.parameters, made.config.parameters);
  const after = engine.forward('In the');
  after.next_token_probabilities.forEach((p, i) => assert.strictEqual(p, before.next_token_probabilities[i]));

  assert.throws(() => engine.loadCheckpoint(bytes.slice(0, Math.floor(bytes.length / 2))),
                (e) => e instanceof AttogradError && e.message.length > 20);
  assert.throws(() => engine.forward('x'.repeat(9)),
                (e) => /longer than this model's context \(block_size 8\)/.test(e.message));
  const a = engine.sample({prompt: 'And', max_new_tokens: 40, temperature: 0.8, top_k: 10, seed: 3});
  const b = engine.sample({prompt: 'And', max_new_tokens: 40, temperature: 0.8, top_k: 10, seed: 3});
  assert.strictEqual(a.text, b.text);
  assert.strictEqual(a.steps.length, 40);
  a.steps.forEach((bars) => assert.ok(bars.length <= 10 && close(bars.reduce((s, x) => s + x.p, 0), 1, 1e-6) ||
                                      bars.length === 8));
});

test('a non-UTF-8 text is refused naming the byte offset', () => {
  const bytes = Buffer.concat([Buffer.from('In the beginning'), Buffer.from([0xff, 0xfe]), Buffer.from(' x')]);
  assert.throws(() => engine.newModelFromBytes(new Uint8Array(bytes), {preset: 'femto'}),
                (e) => /UTF-8/.test(e.message) && /16/.test(e.message));
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
