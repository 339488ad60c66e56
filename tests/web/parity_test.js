// The WebAssembly build against the native one (CTest test `web_parity_test` of the wasm build,
// label `wasm`): a checkpoint written by the native CLI (tests/web/native_fixture.sh) loads in the
// page's module, and
//   - its loss on a fixed batch equals the native build's within 1e-5 relative, and every
//     gradient within 1e-4 of the largest: the same requests go to the module and to
//     attograd_api_native, the page's API compiled natively (web/api_native.cc);
//   - its attention weights for the fixture's prompt, every layer and head, have rows that sum to
//     1 and exact zeros above the diagonal, and equal the CSV of `attograd attention` within 1e-5;
//   - its "attention is not explanation" rows (the forward request's attribution) are the lines
//     `attograd attention --attribution` prints, row for row: the same (layer, head, query), the
//     same most-attended and largest-change keys, the same count of rows where they differ, and
//     each change within 1e-5 relative of the CLI's unrounded one (attribution.csv).
// The two builds run different kernels (Highway's WASM target, 4 f32 lanes, against the native
// AVX2/AVX3 ones), so agreement to f32 rounding is what is asked, not equal bits.
//   node --no-experimental-fetch tests/web/parity_test.js WEB_DIR FIXTURE_DIR NATIVE_BUILD
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const [webDir, fixtureDir, nativeBuild] = process.argv.slice(2).map((p) => path.resolve(p));
const createAttogradModule = require(path.join(webDir, 'attograd_module.js'));
const {loadAttograd} = require(path.join(webDir, 'attograd.js'));
const checkpoint = path.join(fixtureDir, 'run', 'ckpt.safetensors');
const prompt = fs.readFileSync(path.join(fixtureDir, 'prompt.txt'), 'utf8');
const text = fs.readFileSync(path.join(webDir, 'genesis.txt'), 'utf8').slice(5000, 9000);

// The native build's answers to `requests`, one line each (attograd_api_native).
function native(requests) {
  const program = path.join(nativeBuild, 'web', 'attograd_api_native');
  const r = spawnSync(program, [], {input: requests.map((q) => JSON.stringify(q)).join('\n') + '\n',
                                    maxBuffer: 1 << 28});
  assert.strictEqual(r.status, 0, `${program} failed: ${r.stderr}`);
  return r.stdout.toString().trim().split('\n').map((line) => {
    const reply = JSON.parse(line);
    assert.ok(!('error' in reply), `native: ${reply.error}`);
    return reply.ok;
  });
}

// `attograd attention`'s CSV: a header of key tokens, then per query its token (quoted when it
// holds a comma) and its T weights, the last T fields.
function readCsv(file, T) {
  return fs.readFileSync(file, 'utf8').trim().split('\n').slice(1).map((line) =>
    line.split(',').slice(-T).map(Number));
}

let engine;
test.before(async () => {
  engine = await loadAttograd({factory: createAttogradModule});
});

test('loss and gradients on a fixed batch equal the native build\'s', () => {
  const request = {cmd: 'batch_loss', text, rows: 8};
  const [loadedNative, want] = native([{cmd: 'load', path: checkpoint}, request]);
  const loaded = engine.loadCheckpoint(fs.readFileSync(checkpoint));
  assert.deepStrictEqual(loaded.config, loadedNative.config);
  assert.strictEqual(loaded.config.n_layer, 3);
  const got = engine.call(request);
  // A trained model's loss, not a uniform guess: log(V) would be about 4.3.
  assert.ok(got.loss > 1 && got.loss < Math.log(loaded.config.vocab_size), `loss ${got.loss}`);
  const rel = Math.abs(got.loss - want.loss) / Math.abs(want.loss);
  assert.ok(rel <= 1e-5, `loss: wasm ${got.loss}, native ${want.loss}, relative ${rel}`);
  const names = Object.keys(want.gradients);
  assert.deepStrictEqual(Object.keys(got.gradients).sort(), names.slice().sort());
  assert.ok(want.max_abs_gradient > 1e-3, `largest gradient ${want.max_abs_gradient}`);
  let worst = 0, where = '';
  for (const name of names) {
    const a = got.gradients[name], b = want.gradients[name];
    assert.strictEqual(a.length, b.length, name);
    a.forEach((x, i) => {
      const d = Math.abs(x - b[i]);
      if (d > worst) (worst = d), (where = `${name}[${i}]: wasm ${x}, native ${b[i]}`);
    });
  }
  assert.ok(worst <= 1e-4 * want.max_abs_gradient,
            `gradients differ by ${worst} (largest ${want.max_abs_gradient}) at ${where}`);
  console.log(`# loss wasm ${got.loss} native ${want.loss} (relative ${rel.toExponential(2)}); ` +
              `largest gradient difference ${worst.toExponential(2)} of ${want.max_abs_gradient}`);
});

test('the native CLI\'s checkpoint shows attograd attention\'s weights', () => {
  engine.loadCheckpoint(fs.readFileSync(checkpoint));
  const r = engine.forward(prompt);
  const T = prompt.length;
  assert.strictEqual(r.tokens.join(''), prompt);
  assert.strictEqual(r.attention.length, 3);
  let worst = 0, maps = 0;
  r.attention.forEach((heads, l) => {
    assert.strictEqual(heads.length, 3);
    heads.forEach((A, h) => {
      const csv = readCsv(path.join(fixtureDir, 'attention', `layer${l}_head${h}.csv`), T);
      assert.strictEqual(A.length, T);
      assert.strictEqual(csv.length, T);
      A.forEach((row, q) => {
        assert.ok(Math.abs(row.reduce((s, w) => s + w, 0) - 1) <= 1e-6, `layer ${l} head ${h} row ${q}`);
        row.forEach((w, k) => {
          if (k > q) assert.strictEqual(w, 0, `layer ${l} head ${h} (${q}, ${k}) above the diagonal`);
          worst = Math.max(worst, Math.abs(w - csv[q][k]));
        });
      });
      ++maps;
    });
  });
  assert.strictEqual(maps, 9);
  assert.ok(worst <= 1e-5, `attention differs from the CLI's CSV by ${worst}`);
  console.log(`# 9 maps of ${T} x ${T}: largest difference from the CLI's CSV ${worst.toExponential(2)}`);
});

// `attograd attention --attribution`'s printed rows (attention.log): "layer head query
// most_attended "token" (weight) largest_change "token" (change)[  differ]", and its summary.
function readPrintedAttribution(file) {
  const line = /^(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+".*?"\s+\(([0-9.]+)\)\s+(\d+)\s+".*?"\s+\(([-+][0-9.]+)\)(  differ)?$/;
  const rows = [];
  let summary = null;
  for (const l of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = line.exec(l);
    if (m) {
      rows.push({layer: +m[1], head: +m[2], query: +m[3], most_attended: +m[4], weight: +m[5],
                 largest_change: +m[6], change: +m[7], differ: m[8] !== undefined});
    }
    const s = /the one whose dropped term changes the loss most for (\d+) of (\d+) /.exec(l);
    if (s) summary = {differ: +s[1], of: +s[2]};
  }
  return {rows, summary};
}

test('the attribution rows equal attograd attention --attribution\'s', () => {
  engine.loadCheckpoint(fs.readFileSync(checkpoint));
  const r = engine.forward(prompt);
  const T = prompt.length, layers = r.attention.length, heads = r.attention[0].length;
  const got = r.attribution;
  assert.strictEqual(got.reason, null);
  assert.strictEqual(got.rows.length, (T - 2) * layers * heads);
  const printed = readPrintedAttribution(path.join(fixtureDir, 'attention.log'));
  const csv = fs.readFileSync(path.join(fixtureDir, 'attention', 'attribution.csv'), 'utf8')
                  .trim().split('\n').slice(1).map((line) => line.split(',').map(Number));
  assert.strictEqual(printed.rows.length, got.rows.length);
  assert.strictEqual(csv.length, got.rows.length);
  assert.deepStrictEqual(printed.summary, {differ: got.differ, of: got.rows.length});
  let worst = 0, where = '';
  got.rows.forEach((row, i) => {
    const p = printed.rows[i], [l, h, q, most, weight, largest, change, differ] = csv[i];
    const name = `row ${i} (layer ${row.layer}, head ${row.head}, query ${row.query})`;
    // The printed line and the CSV are the same row of the CLI's.
    assert.deepStrictEqual([l, h, q, most, largest, differ === 1],
                           [p.layer, p.head, p.query, p.most_attended, p.largest_change, p.differ], name);
    assert.ok(Math.abs(p.weight - weight) <= 5e-4 && Math.abs(p.change - change) <= 5e-5, name);
    // The page's row against the CLI's.
    assert.deepStrictEqual(
        [row.layer, row.head, row.query, row.most_attended, row.largest_change, row.differ],
        [p.layer, p.head, p.query, p.most_attended, p.largest_change, p.differ], name);
    assert.ok(Math.abs(row.weight - weight) <= 1e-5 * Math.abs(weight), `${name}: weight`);
    const rel = Math.abs(row.change - change) / Math.abs(change);
    if (rel > worst) (worst = rel), (where = `${name}: wasm ${row.change}, native ${change}`);
  });
  assert.ok(worst <= 1e-5, `the changes differ by ${worst} relative at ${where}`);
  assert.ok(got.differ > 0 && got.differ < got.rows.length, `${got.differ} of ${got.rows.length} differ`);
  console.log(`# ${got.rows.length} attribution rows ((${T} - 2) x ${layers} x ${heads}), the CLI's ` +
              `indices in every one, ${got.differ} differ; largest relative difference of a change ` +
              `${worst.toExponential(2)}`);
});
