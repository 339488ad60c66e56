// The companion page: wires the parts of index.html to the engine. The workbench and the
// gradient checks call an engine on this thread (each answer takes milliseconds); training,
// sampling and the attention maps go to the Web Worker (worker.js), which owns the model. No
// maths here: every number shown comes from the engine (attograd.js).
'use strict';

const $ = (id) => document.getElementById(id);
// Text made safe inside HTML and its attributes (a token may be a quote or a '<').
const esc = (text) => String(text).replace(/[&<>"]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'})[c]);
// null is JSON's stand-in for a number it cannot carry: shown as a dash, never as a value (only
// a masked score is −∞, and matrixTable says so itself).
const fmt = (x, digits = 6) =>
    x === null || x === undefined ? '—' : Math.abs(x) >= 1e5 || (x !== 0 && Math.abs(x) < 1e-4) ? x.toExponential(3)
                                                                                : String(+x.toFixed(digits));

// A value for a hover title: 6 significant digits, not the 17 of a double's full text.
const hoverValue = (x) => String(+Number(x).toPrecision(6));

// A heat cell's colour: blue for positive, red for negative, the strength |x| / scale.
function heatColor(x, scale) {
  const a = Math.min(1, Math.abs(x) / scale).toFixed(3);
  return x >= 0 ? `rgba(48, 96, 192, ${a})` : `rgba(192, 48, 64, ${a})`;
}

// The largest |x| of a matrix's finite numbers (the engine writes −∞ as null and an overflow as
// a string), the scale of its heat colours: 1 when there is none or all are 0.
function heatScale(rows) {
  let scale = 0;
  for (const row of rows) for (const x of row) if (typeof x === 'number') scale = Math.max(scale, Math.abs(x));
  return scale || 1;
}

function showError(id, error) {
  $(id).textContent = error ? String(error.message || error) : '';
}

// Part 3's two error lines (training, sampling): an action of the part that succeeds clears both,
// so that a refusal ("the run has reached its step count") does not stay in red beside a sample
// that worked.
function part3Succeeded() {
  for (const id of ['tr-error', 'sm-error']) showError(id, null);
}

// A whole number typed in the input `id`, within the input's own min and max (index.html holds
// each limit once): the browser only marks a number outside them, and would hand it on. Otherwise
// an Error naming the field (`name`), the range and what was typed; `why` says why the maximum.
function wholeNumber(id, name, why) {
  const input = $(id), typed = input.value.trim(), lo = +input.min, hi = +input.max;
  const v = Number(typed);
  if (typed === '' || !Number.isInteger(v))
    throw new Error(`${name} is ${typed === '' ? 'empty (or not a number)' : `'${typed}'`}: type a whole ` +
                    `number from ${lo} to ${hi}.`);
  if (v > hi) throw new Error(`${name} is ${v}: this page takes at most ${hi}${why ? `; ${why}` : ''}.`);
  if (v < lo) throw new Error(`${name} is ${v}: type a whole number from ${lo} to ${hi}.`);
  return v;
}

// ---- Opened as a file --------------------------------------------------------------------------
// A page opened from disk (file://) may not start a Web Worker or fetch its WebAssembly: the
// browser refuses both, and the status would say "Loading" for ever. Say what to do instead.
const OPENED_AS_FILE = location.protocol === 'file:';
if (OPENED_AS_FILE) {
  const status = document.getElementById('status');
  status.className = 'error';
  status.setAttribute('role', 'alert');
  status.textContent = 'This page was opened as a file (file://), where the browser will not start ' +
      'its engine (a Web Worker and WebAssembly need a web server). Run bash scripts/playground.sh ' +
      'in the attograd checkout and open the address it prints (http://127.0.0.1:8000/), or serve ' +
      'this folder over http (python3 -m http.server --directory build-wasm/page).';
  throw new Error('attograd: opened as file://; serve the page over http (bash scripts/playground.sh)');
}

// ---- The worker: calls by id, progress messages ----------------------------------------------
const worker = new Worker('worker.js');
let nextId = 1;
const pending = new Map();
function workerCall(method, args, transfer) {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, {resolve, reject});
    worker.postMessage({id, method, args}, transfer || []);
  });
}
worker.onmessage = (event) => {
  const m = event.data;
  if (m.progress) return onProgress(m.progress);
  const p = pending.get(m.id);
  pending.delete(m.id);
  if (m.error !== undefined) p.reject(new Error(m.error));
  else p.resolve(m.result);
};

// ---- Part 1: the attention workbench ---------------------------------------------------------
// Up to this many rows a (T, T) step shows its numbers on their colours; beyond it only the
// colours, numbers on hover: 64 rows of numbers were a wall 3,000 pixels wide, as cells of 10
// pixels they are a picture that fits the page (the pattern is what a T of 64 is for).
const WORKBENCH_NUMBERS_MAX = 12;

// A matrix as a table: its title and shape above it, each number in a cell. isMasked(i, j):
// whether a null (−∞) at (i, j) is the causal mask's, drawn as masked; any other −∞ is an
// overflow, drawn as a plain −∞. `heat`: colour each cell by its value (heatColor, the scale the
// largest |x| of the matrix, said under the title), so that the pattern of S and A shows at a
// glance; the masked cells hatched grey; at more than WORKBENCH_NUMBERS_MAX rows, colours only.
function matrixTable(id, title, shape, rows, extraHeader, extra, isMasked, heat) {
  const scale = heat ? heatScale(rows) : 1, compact = heat && rows.length > WORKBENCH_NUMBERS_MAX;
  let html = `<div class="step"><h4>${title} <span class="shape">${shape}</span></h4>` +
      (heat ? `<p class="scale">colour: blue +, red −, full at |x| = ${fmt(scale, 4)}` +
              `${compact ? '; hover a cell for its value' : ''}</p>` : '') +
      `<table id="${id}" class="matrix${heat ? ' heat-cells' : ''}${compact ? ' compact' : ''}">`;
  if (extraHeader) html += `<tr>${rows[0].map(() => '<th></th>').join('')}<th>${extraHeader}</th></tr>`;
  rows.forEach((row, i) => {
    // The engine writes -inf as null, and an overflow to +inf or a NaN as a string.
    const cell = (x, j) => {
      if (x === null && isMasked && isMasked(i, j)) return `<td class="masked" title="masked: −∞">${compact ? '' : '−∞'}</td>`;
      if (typeof x !== 'number') {
        const text = x === null ? '−∞' : x === 'inf' ? '+∞' : 'NaN';
        return `<td title="${text}">${compact ? '' : text}</td>`;
      }
      if (!heat) return `<td>${fmt(x)}</td>`;
      const dark = Math.abs(x) / scale > 0.55 ? ' class="dark"' : '';
      return `<td${dark} title="${hoverValue(x)}" data-w="${x}" style="background: ${heatColor(x, scale)}">` +
          `${compact ? '' : fmt(x)}</td>`;
    };
    html += '<tr>' + row.map(cell).join('');
    if (extra) html += `<td class="sum">${fmt(extra[i])}</td>`;
    html += '</tr>';
  });
  return html + '</table></div>';
}

// The workbench's size limit: at most 64 rows (T) and 64 numbers a row (d_k, d_v). The lecture's
// matrices are 2 or 3 rows and the page's models see 8 tokens (block_size 8), so 64 leaves ample
// room for a student's own. Beyond it the page stopped being a workbench: the steps are drawn
// as tables of T x T cells each, rebuilt on every keystroke, and T = 400 froze the page for 13.5
// s, T = 1000 for two minutes (3 million cells), T = 8000 ran the engine out of memory. At 64,
// the three (T, T) tables hold 12,288 cells, drawn in a fraction of a second. Checked on the
// text, before the engine is called (rows are separated by ';' or line breaks, numbers by ',', as
// the engine's lecture::parse_matrix reads them; blank lines start no row). The limit is the
// engine's (lecture::kMaxMatrixSide, given by info), which refuses larger matrices itself: the
// page's check only says so in the page's words, without a round trip per keystroke.
function workbenchTooLarge(request) {
  const WORKBENCH_MAX = engine.info().workbench_max;
  for (const name of ['Q', 'K', 'V']) {
    const rows = request[name].split(/[;\r\n]/).filter((row) => row.trim() !== '');
    if (rows.length > WORKBENCH_MAX)
      return `${name} has ${rows.length} rows: the workbench takes at most ${WORKBENCH_MAX} rows (T ≤ ` +
          `${WORKBENCH_MAX}), so that its tables stay readable and the page answers at once. Remove rows.`;
    // A ',' after a row's last number ends the row (as the engine's parser reads it). A loop, not
    // Math.max(...rows): spread over 200,000 rows overflowed the call stack.
    let widest = 0;
    for (const row of rows) widest = Math.max(widest, row.replace(/,\s*$/, '').split(',').length);
    if (widest > WORKBENCH_MAX)
      return `${name} has a row of ${widest} numbers: the workbench takes at most ${WORKBENCH_MAX} numbers ` +
          `a row (d_k and d_v ≤ ${WORKBENCH_MAX}), so that its tables stay readable and the page answers ` +
          'at once. Remove columns.';
  }
  return null;
}

let lastWorkbench = null;
function runWorkbench() {
  if (!engine) return;
  const request = {
    Q: $('wb-Q').value, K: $('wb-K').value, V: $('wb-V').value,
    scale: $('wb-scale').checked, causal: $('wb-causal').checked,
    softmax_by: $('wb-softmax').value, heads: +$('wb-heads').value,
  };
  let r;
  try {
    const tooLarge = workbenchTooLarge(request);
    if (tooLarge) throw new Error(tooLarge);
    r = engine.attention(request);
  } catch (e) {
    showError('wb-error', e);
    lastWorkbench = null;
    $('wb-steps').innerHTML = '';
    $('wb-warning').textContent = '';
    followPreset(null);
    return;
  }
  showError('wb-error', null);
  lastWorkbench = r;
  followPreset(r);
  const T = r.T, dv = r.d_v;
  const predicting = $('wb-predict').checked && !revealed;
  const hiddenZ = (title, shape) => `<div class="step"><h4>${title} <span class="shape">${shape}</span></h4>` +
      '<p>hidden until you check your prediction</p></div>';
  // One head's steps, S, the mask, A and Z; `suffix` tells the heads' tables apart ('' for one).
  const steps = (h, suffix) => {
    const sName = request.scale ? `S = QKᵀ / √d<sub>k</sub> (√${h.d_k})` : 'S = QKᵀ (not scaled)';
    const maskName = request.causal ? 'mask: −∞ above the diagonal' : 'no mask';
    const aName = request.softmax_by === 'row' ? 'A = softmax over each row' : 'A = softmax over each column';
    const zName = suffix ? 'Z = AV of this head' : 'Z = AV';
    return matrixTable('wb-S' + suffix, sName, `(${T}, ${T})`, h.scores, null, null, null, true) +
        matrixTable('wb-mask' + suffix, maskName, `(${T}, ${T})`, h.masked, null, null,
                    (i, j) => request.causal && j > i, true) +
        matrixTable('wb-A' + suffix, aName, `(${T}, ${T})`, h.weights, 'row sum', h.row_sums, null, true) +
        (predicting ? hiddenZ(zName, `(${T}, ${h.d_v})`) : matrixTable('wb-Z' + suffix, zName, `(${T}, ${h.d_v})`, h.out));
  };
  let html;
  if (!r.heads) {
    html = steps(r, '');
  } else {
    // split → attend per head → concat: each head's columns of Q, K and V, its steps, then Z.
    const cols = (n, h, what) => n === 1 ? `${what} column ${h * n}` : `${what} columns ${h * n}–${h * n + n - 1}`;
    html = r.heads.map((h, i) => `<div class="head" id="wb-head-${i}"><h3>Head ${i + 1} of ${r.heads.length}: ` +
        `${cols(h.d_k, i, 'Q and K')}, ${cols(h.d_v, i, 'V')}</h3><div class="steps">` +
        matrixTable(`wb-Q-h${i}`, 'Q of this head', `(${T}, ${h.d_k})`, h.Q) +
        matrixTable(`wb-K-h${i}`, 'K of this head', `(${T}, ${h.d_k})`, h.K) +
        matrixTable(`wb-V-h${i}`, 'V of this head', `(${T}, ${h.d_v})`, h.V) +
        steps(h, `-h${i}`) + '</div></div>').join('');
    const zName = 'Z = concat of the heads’ Z';
    html += '<div class="head"><h3>Concat</h3><div class="steps">' +
        (predicting ? hiddenZ(zName, `(${T}, ${dv})`) : matrixTable('wb-Z', zName, `(${T}, ${dv})`, r.out)) +
        '</div></div>';
  }
  $('wb-steps').innerHTML = html;
  const warnings = [];
  const rowSums = (r.heads || [r]).flatMap((h) => h.row_sums);
  if (rowSums.some((s) => Math.abs(s - 1) > 1e-9))
    warnings.push('The rows of A no longer sum to 1 (row sums ' + rowSums.map((s) => fmt(s, 4)).join(', ') +
                  '): each output is no longer a weighted average of the rows of V.');
  if (r.out_outside_range_of_V.length > 0 && !predicting)
    warnings.push('Z leaves the range of V: ' + r.out_outside_range_of_V.map(
        (o) => `Z[${o.t}, ${o.c}] = ${fmt(o.z, 4)} is outside [${fmt(o.min, 4)}, ${fmt(o.max, 4)}]`).join('; ') + '.');
  $('wb-warning').textContent = warnings.join(' ');
  $('wb-predict-what').textContent = `Z[${T - 1}, 0]`;
}

// The preset menu follows the boxes: it names the preset whose Q, K and V the engine read from
// them (its parse, so that "1;2" and "1; 2" are the same matrix), or "custom" when none: a menu
// that kept saying "the lecture's 2 tokens" over other numbers would mislabel them. `r` is the
// engine's answer, null when it refused the boxes. The heads are part of a preset: "two heads"
// at one head is custom, so that choosing it again sets its heads back.
let presetMatrices = [];  // [name, JSON of the engine's Q, K and V and the heads] per preset
function followPreset(r) {
  const read = r && JSON.stringify([r.Q, r.K, r.V, r.n_head]);
  const match = presetMatrices.find(([, m]) => m === read);
  $('wb-preset').value = match ? match[0] : 'custom';
}

let revealed = false;
function workbenchChanged() {
  revealed = false;
  $('wb-verdict').textContent = '';
  runWorkbench();
}

function setupWorkbench() {
  // The presets come from the engine (attograd_api.cc's workbench_presets), each read once by the
  // engine for followPreset.
  const presets = engine.info().workbench_presets;
  $('wb-preset').innerHTML = presets.map((p) => `<option value="${p.name}">${esc(p.title)}</option>`).join('') +
      '<option value="custom">custom: your own Q, K and V</option>';
  presetMatrices = presets.map((p) => {
    const r = engine.attention({Q: p.Q, K: p.K, V: p.V});
    return [p.name, JSON.stringify([r.Q, r.K, r.V, p.heads || 1])];
  });
  $('wb-preset').addEventListener('change', () => {
    const p = presets.find((x) => x.name === $('wb-preset').value);
    if (!p) return;  // "custom": the boxes stay as they are
    $('wb-Q').value = p.Q;
    $('wb-K').value = p.K;
    $('wb-V').value = p.V;
    $('wb-heads').value = String(p.heads || 1);
    workbenchChanged();
  });
  for (const id of ['wb-Q', 'wb-K', 'wb-V']) $(id).addEventListener('input', workbenchChanged);
  for (const id of ['wb-scale', 'wb-causal', 'wb-softmax', 'wb-heads']) $(id).addEventListener('change', workbenchChanged);
  $('wb-predict').addEventListener('change', () => {
    $('wb-predict-box').hidden = !$('wb-predict').checked;
    workbenchChanged();
  });
  // Enter in the guess box checks it, as the Check button does.
  $('wb-guess').addEventListener('keydown', (event) => {
    if (event.key === 'Enter') $('wb-check').click();
  });
  $('wb-check').addEventListener('click', () => {
    if (!lastWorkbench) {
      $('wb-verdict').textContent = 'There is no Z to check against: fix Q, K and V first (the message ' +
          'above says what is wrong).';
      return;
    }
    // The answer stays hidden until there is a guess: predicting first is the point of the mode.
    // Number() of a decimal, not parseFloat: "19.8abc" is no guess of 19.8; nor is "0x13" 19 (the
    // boxes take decimals only).
    const typed = $('wb-guess').value.trim();
    const guess = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(typed) ? Number(typed) : NaN;
    const what = $('wb-predict-what').textContent;
    if (typed === '') {
      $('wb-verdict').textContent = `Type the number you expect for ${what} first, then press Check.`;
      return;
    }
    if (!Number.isFinite(guess)) {
      $('wb-verdict').textContent = `'${typed}' is not a number: type the number you expect for ${what}, ` +
          'e.g. 19.8, then press Check.';
      return;
    }
    const actual = lastWorkbench.out[lastWorkbench.T - 1][0];
    revealed = true;
    runWorkbench();
    $('wb-verdict').textContent =
        `You said ${guess}; it is ${fmt(actual, 6)} (off by ${fmt(Math.abs(guess - actual), 4)}).`;
  });
}

// ---- Part 2: positions ------------------------------------------------------------------------
// A (rows, cols) matrix as crisp coloured cells (heatColor); each cell's value in its title
// (hover, rounded) and in full in data-w.
function heatTable(id, rows, scale, rowLabel, colLabel) {
  let html = `<table id="${id}" class="heat"><tr><th></th>` +
      rows[0].map((_, c) => `<th>${colLabel(c)}</th>`).join('') + '</tr>';
  rows.forEach((row, r) => {
    html += `<tr><th>${rowLabel(r)}</th>` + row.map((x) =>
      `<td title="${hoverValue(x)}" data-w="${x}" style="background: ${heatColor(x, scale)}"></td>`).join('') + '</tr>';
  });
  return html + '</table>';
}

// The table's size is the inputs' range (index.html): at most 128 x 64 = 8,192 cells, drawn at once.
function drawPositions() {
  showError('pe-error', null);
  try {
    const why = 'a bigger table stops fitting the page, and the pattern shows at this size';
    const T = wholeNumber('pe-T', 'positions T', why), C = wholeNumber('pe-C', 'n_embd', why);
    // The browser steps the box by 2 but hands on whatever is typed.
    if (C % 2 !== 0)
      throw new Error(`n_embd is ${C}: type an even number. The table's columns come in pairs, a sine and ` +
                      'a cosine of the same frequency.');
    const r = engine.positions(T, C);
    $('pe-map').innerHTML = `<div class="map"><h4>sinusoidal table <span class="shape">(${r.T}, ${r.n_embd})</span></h4>` +
        heatTable('pe-table', r.table, 1, (p) => p, (c) => c) + '</div>';
  } catch (e) {
    // The old table goes with its numbers: left drawn, it would look like the answer to these.
    $('pe-map').innerHTML = '';
    showError('pe-error', e);
  }
}

// RoPE as dials, one per channel pair i: a mark at the angle m·θ_i by which q is turned, one at
// n·θ_i for k, and the arc between them, (m − n)·θ_i, the only angle the score sees. The angles
// are the engine's (its rope answer's "pairs"); this only places them on circles (counter-
// clockwise from 3 o'clock, as angles are drawn in maths).
function ropeDials(pairs, m, n) {
  const R = 40, at = (a, r = R) => [(r * Math.cos(a)).toFixed(3), (-r * Math.sin(a)).toFixed(3)];
  const rad = (a) => fmt(a, 4) + ' rad';
  return pairs.map((p, i) => {
    const [mx, my] = at(p.angle_m), [nx, ny] = at(p.angle_n);
    // The arc from n's mark counter-clockwise to m's: (m − n)·θ_i, turned into [0, 2π).
    const [ax, ay] = at(p.angle_n, R * 0.6), [bx, by] = at(p.angle_n + p.angle_difference, R * 0.6);
    const arc = `M ${ax} ${ay} A ${R * 0.6} ${R * 0.6} 0 ${p.angle_difference > Math.PI ? 1 : 0} 0 ${bx} ${by}`;
    const [lmx, lmy] = at(p.angle_m, R + 9), [lnx, lny] = at(p.angle_n, R + 9);
    return `<figure class="dial" id="rope-dial-${i}"><svg width="110" height="110" viewBox="-55 -55 110 110" ` +
        `role="img" aria-label="pair ${i}: m·θ = ${rad(p.angle_m)}, n·θ = ${rad(p.angle_n)}">` +
        `<circle r="${R}" class="rim"/><path class="arc" d="${arc}"/>` +
        `<line class="mark-m" x1="0" y1="0" x2="${mx}" y2="${my}"/>` +
        `<line class="mark-n" x1="0" y1="0" x2="${nx}" y2="${ny}"/>` +
        `<text x="${lmx}" y="${lmy}" class="label-m">m</text><text x="${lnx}" y="${lny}" class="label-n">n</text>` +
        `</svg><figcaption>pair ${i}, θ = ${fmt(p.theta, 4)}:<br>${m}·θ ≡ ${rad(p.angle_m)}<br>` +
        `${n}·θ ≡ ${rad(p.angle_n)}<br>(${m} − ${n})·θ ≡ ${rad(p.angle_difference)}</figcaption></figure>`;
  }).join('');
}

let ropeGrid = [];  // [m, n, score] of the last table, for the tests
function drawRope() {
  showError('rope-error', null);
  $('rope-m-v').textContent = $('rope-m').value;
  $('rope-n-v').textContent = $('rope-n').value;
  const q = $('rope-q').value, k = $('rope-k').value;
  try {
    const r = engine.rope(q, k, +$('rope-m').value, +$('rope-n').value);
    $('rope-result').textContent = `q at m = ${$('rope-m').value}: [${r.q_rotated.map((x) => fmt(x, 4)).join(', ')}]; ` +
        `k at n = ${$('rope-n').value}: [${r.k_rotated.map((x) => fmt(x, 4)).join(', ')}]; ` +
        `score q·k = ${fmt(r.score, 6)} (without RoPE ${fmt(r.score_without_rope, 6)}), m − n = ` +
        `${$('rope-m').value - $('rope-n').value}.`;
    $('rope-dial').innerHTML = ropeDials(r.pairs, +$('rope-m').value, +$('rope-n').value);
    const N = 8, rows = [];
    ropeGrid = [];
    for (let m = 0; m < N; ++m) {
      rows.push([]);
      for (let n = 0; n < N; ++n) {
        const score = engine.rope(q, k, m, n).score;
        rows[m].push(score);
        ropeGrid.push([m, n, score]);
      }
    }
    const scale = Math.max(...ropeGrid.map((g) => Math.abs(g[2])), 1e-12);
    $('rope-map').innerHTML = '<div class="map"><h4>score of q at m (rows) with k at n (columns)</h4>' +
        heatTable('rope-table', rows, scale, (m) => 'm=' + m, (n) => n) + '</div>';
  } catch (e) {
    showError('rope-error', e);
    $('rope-result').textContent = '';
    $('rope-dial').innerHTML = '';
    $('rope-map').innerHTML = '';
  }
}

// "dog bites man" against "man bites dog": the mean over the tokens, and each word's output of
// self-attention, with or without positions (every number from the engine's `order`).
const ORDERS = [['dog', 'bites', 'man'], ['man', 'bites', 'dog']];
const sameVector = (a, b) => a.every((x, i) => Math.abs(x - b[i]) <= 1e-12 * Math.max(1, Math.abs(x)));
function orderResults(positions) {
  const [a, b] = ORDERS.map((words) => engine.order(words, positions));
  const word = (r, w) => r.attention[r.words.indexOf(w)];
  return {
    a, b,
    mean_same: sameVector(a.mean, b.mean),
    attention_same: ['dog', 'bites', 'man'].every((w) => sameVector(word(a, w), word(b, w))),
  };
}

function drawOrder() {
  const positions = $('ord-pos').checked;
  const r = orderResults(positions);
  const vec = (v) => '[' + v.map((x) => fmt(x, 4)).join(', ') + ']';
  $('ord-result').innerHTML = [r.a, r.b].map((o) =>
      `<div class="step"><h4>“${o.words.join(' ')}”${positions ? ' + positions' : ''}</h4>` +
      `<p>mean over the tokens: ${vec(o.mean)}</p><table class="matrix"><tr><th>word</th><th>attention output</th></tr>` +
      o.words.map((w, t) => `<tr><td>${w}</td><td>${vec(o.attention[t])}</td></tr>`).join('') +
      '</table></div>').join('');
  $('ord-verdict').textContent = (r.mean_same ? 'The mean is the same in both orders' : 'The means differ') +
      (r.attention_same ? '; each word gets the same attention output wherever it stands: ' +
                          'without positions, attention cannot tell the orders apart.'
                        : '; with positions, each word\'s attention output changes with the order.');
}

function setupPositions() {
  for (const id of ['pe-T', 'pe-C']) $(id).addEventListener('input', drawPositions);
  for (const id of ['rope-q', 'rope-k', 'rope-m', 'rope-n']) $(id).addEventListener('input', drawRope);
  $('ord-pos').addEventListener('change', drawOrder);
  drawPositions();
  drawRope();
  drawOrder();
}

// ---- Part 3: training, curves, sampling --------------------------------------------------------
let baselines = null;
let history = {train: [], val: []};  // train: [step, loss]; val: [step, val_loss, evaluation]
let runSteps = 0;  // the steps of the model's run: Build's, then each Train's
// The settings Build took, for Train to compare: {withSteps, withoutSteps} (builtSettings).
let builtWith = null;

// The custom GPT's sizes go up to their inputs' maxima in index.html (n_layer 4, n_head 4,
// n_embd 32), the batch to 256 and the steps to 20,000 (the pico homework's). Beyond them the
// page stops being a place to watch a model learn: under node on this machine (busy), a step of
// batch 32 took 47 ms for pico, 83 ms at the maximum (4, 4, 32) and 0.9 s at (8, 8, 128), whose
// curves crawl and whose Pause waits for the step under way (the worker answers between steps).
const TOO_BIG_MODEL = 'a bigger model trains too slowly in the page: train it with the command ' +
    'line (attograd train), the same engine built natively';
const trainingSteps = () => wholeNumber('tr-steps', 'steps', 'the pico homework takes 20,000; run a ' +
                                        'longer training with the command line (attograd train)');
// A number above 0 (or at least 0) typed in the box `id`, checked as Steps and batch are (the
// engine's message would name its TrainOptions): the rate boxes have no maximum, a rate too high
// shows as divergence.
function rate(id, name, atLeastZero) {
  const typed = $(id).value.trim(), v = Number(typed), what = atLeastZero ? '0 or more' : 'a number above 0';
  const example = id === 'tr-lr' ? '0.01' : '0.001';
  if (typed === '' || !Number.isFinite(v))
    throw new Error(`${name} is empty (or not a number): type ${what}, e.g. ${example}.`);
  if (atLeastZero ? v < 0 : v <= 0) throw new Error(`${name} is ${v}: type ${what}, e.g. ${example}.`);
  return v;
}
const learningRate = () => rate('tr-lr', 'learning rate', false);

// The settings of a run, each with its box and the JSON name model_new reads it under (that of
// `attograd train --config`, TrainOptions' table): Build sends them, Train and a change of a box
// compare them with Build's, and the homework preset fills them from train_pico.sh's flags (the
// engine's info says which flag each name is).
const RUN_BOXES = [
  // [JSON name, box, label]
  ['max_steps', 'tr-steps', 'steps'],
  ['batch_size', 'tr-batch', 'batch'],
  ['learning_rate', 'tr-lr', 'learning rate'],
  ['min_lr', 'tr-min_lr', 'min lr'],
  ['warmup_steps', 'tr-warmup_steps', 'warmup'],
  ['eval_interval', 'tr-eval_interval', 'evaluate every'],
  ['eval_early', 'tr-eval_early', 'early every'],
  ['eval_iters', 'tr-eval_iters', 'eval batches'],
];
const SHIPPED_TEXTS = {genesis: {file: 'genesis.txt', name: 'Genesis'},
                       kjv: {file: 'kjv.txt', name: 'the King James Bible'}};
const textName = () => (chosenText ? chosenText.name : SHIPPED_TEXTS[$('tr-text').value].name);

// What Build read (the text, model, custom sizes and every box of RUN_BOXES), as [label, value]
// with numbers written as numbers ("0.010" is 0.01): Train and a change of a box compare it with
// Build's, so that a change made since is not silently ignored. Steps may change once the run has
// trained (the schedule keeps its end, as the end-of-run message says): withSteps false.
function builtFields(withSteps) {
  const boxes = [['model', 'tr-model', false]];
  if ($('tr-model').value === 'custom')
    boxes.push(['n_layer', 'tr-n_layer', true], ['n_head', 'tr-n_head', true], ['n_embd', 'tr-n_embd', true]);
  for (const [key, id, label] of RUN_BOXES) if (withSteps || key !== 'max_steps') boxes.push([label, id, true]);
  const value = (id, numeric) => {
    const typed = $(id).value.trim();
    return numeric && typed !== '' && Number.isFinite(Number(typed)) ? String(Number(typed)) : typed;
  };
  return [['text', textName()]].concat(boxes.map(([label, id, numeric]) => [label, value(id, numeric)]));
}
const joinFields = (fields) => fields.map(([label, v]) => `${label} ${v}`).join(', ');
const builtSettings = (withSteps) => joinFields(builtFields(withSteps));

function trainingRequest() {
  const choice = $('tr-model').value;
  const steps = trainingSteps();
  const lr = learningRate(), minLr = rate('tr-min_lr', 'min lr', true);
  if (minLr > lr)
    throw new Error(`min lr is ${minLr}, above the learning rate ${lr}: the cosine decay goes down from the ` +
                    'learning rate to min lr; type a min lr at most the learning rate (a tenth of it is usual).');
  const r = {
    kind: choice === 'bigram' || choice === 'average' ? choice : 'gpt',
    // The bigram and the average at pico's size: the lecture's comparison, averaging against
    // attention, is between models of the same width (femto's n_embd 2 average is no rival).
    preset: choice === 'femto' ? 'femto' : 'pico',
    batch_size: wholeNumber('tr-batch', 'batch', 'a bigger batch makes each step too slow for the page'),
    learning_rate: lr,
    min_lr: minLr,
    max_steps: steps,
    warmup_steps: wholeNumber('tr-warmup_steps', 'warmup'),
    eval_interval: wholeNumber('tr-eval_interval', 'evaluate every'),
    eval_early: wholeNumber('tr-eval_early', 'early every'),
    eval_iters: wholeNumber('tr-eval_iters', 'eval batches', 'more batches make each evaluation too slow for the page'),
  };
  if (choice === 'custom') {
    r.n_layer = wholeNumber('tr-n_layer', 'n_layer', TOO_BIG_MODEL);
    r.n_head = wholeNumber('tr-n_head', 'n_head', TOO_BIG_MODEL);
    r.n_embd = wholeNumber('tr-n_embd', 'n_embd', TOO_BIG_MODEL);
  }
  return r;
}

// ---- The homework 11 preset: examples/train_pico.sh's command, read from the script itself ----
// The build copies the script beside the page (web/CMakeLists.txt), so that its settings are
// written once: here its `attograd train` command is read flag by flag, each training option's
// flag named by the engine (info's train_flags, TrainOptions' table) and put in its box. The
// flags that are not settings of the run in the page are named with the reason; a flag the page
// cannot follow is said, never dropped.
const HOMEWORK_SCRIPT = 'examples/train_pico.sh';
const NOT_IN_THE_PAGE = {
  '--out': 'the run directory (the page keeps the run in memory: Save checkpoint writes it)',
  '--overwrite': 'the run directory',
  '--log-interval': 'the progress lines (the page reports every chunk of steps)',
};
// The script's `attograd train` command as [flag, value] pairs (a flag without a value: true).
function trainCommandFlags(script) {
  const lines = script.replace(/\\\n/g, ' ').split('\n');
  const command = lines.find((line) => /^\s*\S*attograd train\s/.test(line));
  if (!command) throw new Error(`${HOMEWORK_SCRIPT} has no attograd train command`);
  const words = command.trim().split(/\s+/).slice(2).filter((w) => w !== '"$@"');
  const flags = [];
  for (let i = 0; i < words.length; ++i) {
    const flag = words[i];
    if (!flag.startsWith('--')) throw new Error(`${HOMEWORK_SCRIPT}: '${flag}' is not a flag`);
    const hasValue = i + 1 < words.length && !words[i + 1].startsWith('--');
    flags.push([flag, hasValue ? words[++i] : true]);
  }
  return flags;
}
// The boxes' values for the command's flags: {box id: value}, with the model and the text.
function homeworkBoxes(flags) {
  const names = engine.info().train_flags;
  const boxes = {}, unknown = [];
  for (const [flag, value] of flags) {
    const box = RUN_BOXES.find(([key]) => key === names[flag]);
    if (box) boxes[box[1]] = value;
    else if (flag === '--preset' && ['femto', 'pico'].includes(value)) boxes['tr-model'] = value;
    else if (flag === '--corpus' && SHIPPED_TEXTS[value]) boxes['tr-text'] = value;
    else if (!NOT_IN_THE_PAGE[flag]) unknown.push(`${flag} ${value}`);
  }
  if (unknown.length)
    throw new Error(`${HOMEWORK_SCRIPT} trains with ${unknown.join(', ')}, which this page has no box for: ` +
                    'the homework preset would not be the homework. Run it with the command line.');
  return boxes;
}
let homework = null;  // {command, boxes}, once read
async function homeworkPreset() {
  if (homework) return homework;
  const reply = await fetch(HOMEWORK_SCRIPT);
  if (!reply.ok) throw new Error(`${HOMEWORK_SCRIPT} could not be fetched: the server answered ${reply.status}`);
  const flags = trainCommandFlags(await reply.text());
  homework = {flags, boxes: homeworkBoxes(flags)};
  return homework;
}
async function applyHomework() {
  showError('tr-error', null);
  try {
    const h = await homeworkPreset();
    chosenText = null;
    for (const [id, value] of Object.entries(h.boxes)) $(id).value = value;
    showChosenText();
    $('tr-custom').hidden = $('tr-model').value !== 'custom';
    const shown = h.flags.filter(([flag]) => !NOT_IN_THE_PAGE[flag]);
    $('tr-homework-line').textContent = `${HOMEWORK_SCRIPT}: attograd train ` +
        shown.map(([flag, value]) => `${flag} ${value}`).join(' ') + ' (press Build, then Train)';
    settingsChanged();
  } catch (e) {
    showError('tr-error', e);
  }
}

// A box changed after Build: said at once, with what changed (Build's value then, the box's now),
// so that a run going on with Build's settings never looks as if it took the new ones. Train
// refuses the same change (setupTraining).
function settingsChanged() {
  if (builtWith === null) {
    $('tr-changed').textContent = '';
    return;
  }
  const trained = lastProgress !== null;
  const then = trained ? builtWith.fieldsWithoutSteps : builtWith.fieldsWithSteps;
  const now = builtFields(!trained);
  const changed = now.filter(([label, v]) => {
    const old = then.find(([l]) => l === label);
    return !old || old[1] !== v;
  }).map(([label, v]) => {
    const old = then.find(([l]) => l === label);
    return `${label} ${old ? old[1] : '—'} → ${v}`;
  });
  const running = !$('tr-pause').disabled;
  $('tr-changed').textContent = changed.length === 0 ? ''
      : `Changed since Build: ${changed.join(', ')}. ` +
        (running ? 'The run goes on with Build\'s settings; ' : 'Train will refuse them; ') +
        'press Build to start a model with the new ones, or set them back.';
}

// The model changed (built or loaded): whatever trained before is gone with its run (the worker
// drops it), so its progress line and steps go too, and so does a sample of the old model; the
// buttons follow the new model: Train only for a model built from a text here (a loaded
// checkpoint has no text to train on), Pause only while a run goes.
function modelChanged(trainable) {
  lastProgress = null;
  history = {train: [], val: []};
  runSteps = 0;
  builtWith = null;
  $('tr-progress').textContent = '';
  $('tr-changed').textContent = '';
  $('tr-plateau').textContent = '';
  $('tr-start').disabled = !trainable;
  $('tr-pause').disabled = true;
  sampling = null;
  $('sm-text').innerHTML = '';
  delete $('sm-bars').dataset.step;
  $('sm-bars').innerHTML = '';
  $('sm-step').textContent = '';
  $('sm-stop').disabled = true;
  // Part 4's maps were the old model's: they go, with their legend and comparison.
  $('li-maps').innerHTML = '';
  $('li-legend').hidden = true;
  $('li-summary').textContent = '';
}

// A shipped text (genesis.txt, or kjv.txt, the homework's) from the page's own server; fetched at
// the first Build on it, so a server stopped since the page loaded (or a page opened offline)
// shows up here.
async function fetchShippedText(file) {
  const fix = 'Start the page\'s server again (bash scripts/playground.sh) and reload, or choose a text ' +
      'file of your own above.';
  let reply;
  try {
    reply = await fetch(file);
  } catch (e) {
    throw new Error(`The shipped text ${file} could not be fetched (${e.message}): the page's server ` +
                    `is not answering. ${fix}`);
  }
  if (!reply.ok)
    throw new Error(`The shipped text ${file} could not be fetched: the server answered ${reply.status} ` +
                    `${reply.statusText}. ${fix}`);
  return reply.text();
}

// The text file chosen to train on, read as soon as it is chosen into {bytes, name}, and the input
// emptied: an input fires no change for the file it already holds, so choosing the same file
// again (edited since) would do nothing, and Chrome refuses to read a file changed after it was
// chosen. null: the shipped text.
let chosenText = null;
async function readChosenFile(input, use) {
  const file = input.files[0];
  if (!file) return;
  try {
    await use(file, new Uint8Array(await file.arrayBuffer()));
  } catch (e) {
    showError('tr-error', e.name === 'NotReadableError'
                              ? `${file.name} could not be read (${e.message}): choose it again.`
                              : e);
  } finally {
    input.value = '';
  }
}
function showChosenText() {
  $('tr-file-name').textContent = chosenText
      ? `training text: ${chosenText.name} (${chosenText.bytes.length.toLocaleString()} bytes)`
      : `training text: ${textName()} (shipped with the page)`;
  $('tr-file-clear').hidden = !chosenText;
}

// "gpt with 1,234 parameters (V = 18, block_size 8, n_layer 1, ...)": only the settings the
// engine says this kind of model has (a bigram has no layers, heads or embedding).
function modelLine(c) {
  const names = [['vocab_size', 'V = '], ['block_size', 'block_size '], ['n_layer', 'n_layer '],
                 ['n_head', 'n_head '], ['n_embd', 'n_embd ']];
  const settings = names.filter(([key]) => c[key] !== undefined).map(([key, label]) => label + c[key]);
  return `${c.kind} with ${c.parameters.toLocaleString()} parameters (${settings.join(', ')})`;
}

const shippedTexts = {};  // the shipped texts fetched so far, by file
let building = false;  // a Build is under way: Train stays off until it ends
async function buildModel() {
  showError('tr-error', null);
  // One build at a time: a second click queued a second model behind the first (a large file
  // takes a minute), which then replaced the one the student had started to train.
  building = true;
  $('tr-build').disabled = $('tr-start').disabled = true;
  const info = $('tr-info').textContent;
  $('tr-info').textContent = 'Building: reading the text, counting the baselines…';
  try {
    const request = trainingRequest();
    const settings = {withSteps: builtSettings(true), withoutSteps: builtSettings(false),
                      fieldsWithSteps: builtFields(true), fieldsWithoutSteps: builtFields(false)};
    if (chosenText) {
      // An empty file, in the page's words (the engine's would name its tokenizer's function).
      if (chosenText.bytes.length === 0)
        throw new Error(`${chosenText.name} is empty: choose a file with the text to train on (a few ` +
                        `thousand characters at least), or press “use the shipped text” to train on ` +
                        `${SHIPPED_TEXTS[$('tr-text').value].name}.`);
      request.bytes = chosenText.bytes;
      request.name = chosenText.name;
    } else {
      const file = SHIPPED_TEXTS[$('tr-text').value].file;
      request.text = shippedTexts[file] || (shippedTexts[file] = await fetchShippedText(file));
    }
    const r = await workerCall('newModel', request);
    part3Succeeded();
    baselines = r;
    modelChanged(true);
    builtWith = settings;
    runSteps = request.max_steps;
    const c = r.config;
    $('tr-info').textContent = `${modelLine(c)}; ${r.train_tokens.toLocaleString()} train and ` +
        `${r.val_tokens.toLocaleString()} val characters` +
        (r.line_ends_made_lf ? ` (${r.line_ends_made_lf.toLocaleString()} Windows or old-Mac line ends ` +
                               'read as plain line breaks, as attograd train reads a file)' : '') +
        `. Baselines (val): unigram ${fmt(r.unigram_loss, 4)}, bigram ${fmt(r.bigram_loss, 4)} nats.`;
    $('tr-save').disabled = false;
    for (const id of ['sm-go', 'li-go']) $(id).disabled = false;
    drawChart();
  } catch (e) {
    if ($('tr-info').textContent.startsWith('Building')) {
      // The model before stays, and so does its Train (unless its run is going: Pause is on).
      $('tr-info').textContent = info;
      $('tr-start').disabled = !baselines || !$('tr-pause').disabled;
    }
    showError('tr-error', e);
  } finally {
    building = false;
    $('tr-build').disabled = false;
  }
}

let lastProgress = null;
let progressReports = 0;  // the worker's reports so far, against the chart's draws (the tests)
function onProgress(p) {
  const first = p.step - p.losses.length + 1;
  p.losses.forEach((loss, i) => history.train.push([first + i, loss]));
  if (p.error) {
    showError('tr-error', p.error);
    $('tr-pause').disabled = true;
    $('tr-start').disabled = !baselines || building;
    drawChart();
    return;
  }
  ++progressReports;
  lastProgress = p;
  if (p.eval) history.val.push([p.eval.step, p.eval.val_loss, p.eval]);
  const left = (p.target - p.step) * (p.seconds_per_step || 0);
  const last = history.val[history.val.length - 1];
  const loss = p.losses.length ? `, loss ${fmt(p.losses[p.losses.length - 1], 4)}, ` +
      `${Math.round(p.tokens_per_second).toLocaleString()} tokens/s, ${left.toFixed(1)} s left` : '';
  $('tr-progress').textContent = `step ${p.step} / ${p.target}${loss}` +
      (last ? `; val loss ${fmt(last[2].val_loss, 4)} (perplexity ${fmt(last[2].val_ppl, 3)}) at step ${last[0]}` : '') +
      (p.done ? ' — done' : '');
  if (p.eval) explainPlateau(p.eval);
  if (p.done) {
    $('tr-pause').disabled = true;
    $('tr-start').disabled = !baselines || building;
    settingsChanged();  // "Train will refuse them", no longer "the run goes on"
    if (window.page.onDone) window.page.onDone(p);  // bench/page_pico.py times runs with it
    drawChart();  // the run's last points at once, not a quarter of a second later
  } else {
    requestChart();
  }
}

// femto's plateau, said where it happens: once a femto's val loss is within 0.1 nats of the
// unigram baseline (after step 0). Its LayerNorm normalises n_embd = 2 numbers, (a, b) to ±(1, −1)
// times gamma plus beta: one bit a position, so each position's output is one of two
// distributions, and the best it can do is about the character frequencies, the unigram
// (tests/web/api_test.js: 3.03 to 3.07 on Genesis by seed, against 3.031).
const PLATEAU_NATS = 0.1;
function explainPlateau(evaluation) {
  const c = baselines && baselines.config;
  if (!c || c.kind !== 'gpt' || c.n_embd !== 2 || evaluation.step === 0 || !Number.isFinite(evaluation.val_loss) ||
      evaluation.val_loss > baselines.unigram_loss + PLATEAU_NATS)
    return;
  $('tr-plateau').textContent = `femto has reached the unigram baseline (val loss ` +
      `${fmt(evaluation.val_loss, 4)} at step ${evaluation.step}, unigram ${fmt(baselines.unigram_loss, 4)}) and ` +
      'will stay about there: its layer norm normalises n_embd = 2 numbers, which leaves one bit a position ' +
      '((a − b) / |a − b|, times gamma, plus beta), so each position\'s output is one of two distributions, ' +
      'enough for the character frequencies (the unigram) but not for using the context. pico (n_embd 6) ' +
      'falls below it and below the bigram: press Homework 11 settings, or choose pico, and Build.';
}

// The chart: the train loss of each step (faint) under its running mean, the val loss of each
// evaluation (a line with a dot at each, from the step-0 evaluation on, so that the crossings of
// the baselines show) and the counted baselines (dashed), as loss in nats or as perplexity, e^loss,
// the number of equally likely characters the model is as unsure as (the CLI writes both,
// loss.png and perplexity.png); on a linear or a log axis. A val point's perplexity is the
// engine's (its evaluation's val_ppl). The legend is HTML under the canvas (#tr-legend), which
// wraps rather than being cut off, and each label drawn on the canvas is measured and its margin
// made to fit it.
const CHART = {train: 'rgba(48, 96, 192, 0.3)', smooth: '#3060c0', val: '#c02040', unigram: '#b05000',
               bigram: '#007040'};
let chartDrawn = null;  // what drawChart drew last, for the tests (window.page.chart())

// The running mean of the last `n` points of [step, value] (fewer at the start), the curve
// drawn over the raw one: at 20,000 steps the raw losses, one a step, are a band 0.3 nats thick
// that hid the val curve. A value that is not finite (a diverging run) is left out of the means;
// a point whose window holds none is left out.
function runningMean(points, n) {
  const out = [];
  let sum = 0, count = 0;
  points.forEach(([step, v], i) => {
    if (Number.isFinite(v)) sum += v, ++count;
    if (i >= n) {
      const old = points[i - n][1];
      if (Number.isFinite(old)) sum -= old, --count;
    }
    if (count > 0) out.push([step, sum / count]);
  });
  return out;
}
// The window: about a 200th of the run's steps (100 at the homework's 20,000), so that the mean
// follows the curve's bend at any length.
const smoothingWindow = (steps) => Math.max(1, Math.round(steps / 200));

function chartSeries() {
  const perplexity = $('tr-metric').value === 'perplexity';
  const y = perplexity ? Math.exp : (loss) => loss;
  // JSON has no infinity: a val_ppl the engine could not write (e^loss overflowed) comes as null.
  const ppl = (evaluation) => (evaluation.val_ppl === null ? Infinity : evaluation.val_ppl);
  return {
    metric: perplexity ? 'perplexity' : 'loss',
    train: history.train.map(([step, loss]) => [step, y(loss)]),
    val: history.val.map(([step, loss, evaluation]) => [step, perplexity ? ppl(evaluation) : loss]),
    unigram: y(baselines.unigram_loss),
    bigram: y(baselines.bigram_loss),
  };
}

function drawLegend(metric, meanOver) {
  const what = metric === 'perplexity' ? 'perplexity' : 'loss';
  const key = (color, dashed, width, text) =>
      `<span class="key"><span class="line" style="border-top: ${width}px ${dashed ? 'dashed' : 'solid'} ` +
      `${color}"></span>${text}</span>`;
  $('tr-legend').innerHTML = key(CHART.train, false, 1, `train ${what} (each step)`) +
      key(CHART.smooth, false, 2, `its mean over the last ${meanOver} step${meanOver === 1 ? '' : 's'}`) +
      key(CHART.val, false, 2, `val ${what} (each evaluation, on text not trained on)`) +
      key(CHART.unigram, true, 1, 'unigram baseline (character frequencies)') +
      key(CHART.bigram, true, 1, 'bigram baseline (counted pairs)');
}

// A tick label that stays short whatever the run did: a diverging run's perplexity reaches e^100
// (1e43), which toFixed wrote out in 44 digits.
const tickLabel = (v) => (Math.abs(v) >= 1e5 ? v.toExponential(1) : v >= 100 ? v.toFixed(0)
                          : v >= 10 ? v.toFixed(1) : v.toFixed(2));
// Steps on the x axis at 1, 2 or 5 times a power of ten, about 6 of them.
function stepTicks(maxStep) {
  const raw = maxStep / 6, p = Math.pow(10, Math.floor(Math.log10(raw)));
  const every = [1, 2, 5, 10].map((m) => m * p).find((t) => t >= raw);
  const ticks = [];
  for (let t = 0; t <= maxStep; t += every) ticks.push(t);
  return ticks;
}

// Redraws at most CHART_HZ times a second: the worker reports every ~50 ms, and a 20,000-point
// redraw on each report took the CPU the worker trains on (the page's speed against the native
// run, docs/performance.md). A report between draws schedules one draw at the end of the interval.
const CHART_HZ = 4;
let chartLast = -Infinity, chartTimer = null, chartDraws = 0;
function requestChart() {
  if (chartTimer !== null) return;
  const wait = chartLast + 1000 / CHART_HZ - performance.now();
  if (wait <= 0) return drawChart();
  chartTimer = setTimeout(() => {
    chartTimer = null;
    drawChart();
  }, wait);
}

function drawChart() {
  if (chartTimer !== null) clearTimeout(chartTimer), chartTimer = null;
  chartLast = performance.now();
  ++chartDraws;
  const canvas = $('tr-chart');
  // Crisp on a high-DPI screen: the canvas's pixels are devicePixelRatio times its CSS size (its
  // width and height attributes, 760 x 280), and everything is drawn in CSS pixels through the
  // scale. The CSS width is set and the height follows the aspect ratio, so that the chart still
  // shrinks to a phone's width (max-width: 100%).
  const W = 760, H = 280, Tp = 10, B = 44, dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(W * dpr)) {
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
    canvas.style.width = W + 'px';
  }
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = '#fff';
  g.fillRect(0, 0, W, H);
  // The axis ends at the run's last step (Build's or Train's Steps), not at what the Steps box
  // says now: typing 20000 there squeezed a 2,000-step curve into the left tenth.
  let maxStep = Math.max(10, runSteps);
  for (const p of history.train.concat(history.val)) maxStep = Math.max(maxStep, p[0]);
  const meanOver = smoothingWindow(maxStep);
  drawLegend($('tr-metric').value, meanOver);
  chartDrawn = null;
  if (!baselines) return;
  const s = chartSeries(), log = $('tr-log').checked;
  s.smooth = runningMean(s.train, meanOver);
  // The y range from the finite values only: an infinite perplexity (or a NaN) would make every
  // coordinate NaN; such points are left out of the curves, which break there.
  const finite = (v) => Number.isFinite(v) && (!log || v > 0);
  const values = s.train.concat(s.val).map((p) => p[1]).concat([s.unigram, s.bigram]).filter(finite);
  const tf = (v) => (log ? Math.log(v) : v);
  let lo = Infinity, hi = -Infinity;
  for (const v of values) lo = Math.min(lo, v), hi = Math.max(hi, v);
  // A margin of 5% above and below; on a linear axis not below 0, which no loss or perplexity is
  // (a diverged run's range, 0 to 1e15, put its lowest tick at -1.4e+14).
  let y0 = tf(lo) - 0.05 * (tf(hi) - tf(lo) || 1);
  const y1 = tf(hi) + 0.05 * (tf(hi) - tf(lo) || 1);
  if (!log && lo >= 0) y0 = Math.max(0, y0);
  const ticks = [0, 1, 2, 3, 4].map((k) => (log ? Math.exp(y0 + (y1 - y0) * k / 4) : y0 + (y1 - y0) * k / 4));
  const baseline = [['unigram', s.unigram], ['bigram', s.bigram]].map(([name, v]) => [name, v, `${name} ${tickLabel(v)}`]);
  g.font = '12px sans-serif';
  const width = (text) => g.measureText(text).width;
  // The margins fit the widest tick label (left) and baseline label (right).
  const L = Math.ceil(Math.max(...ticks.map((v) => width(tickLabel(v))))) + 10;
  const R = Math.ceil(Math.max(...baseline.map((b) => width(b[2])))) + 14;
  const X = (step) => L + (W - L - R) * (step / maxStep);
  const Y = (v) => Tp + (H - Tp - B) * (1 - (tf(v) - y0) / (y1 - y0));
  const labels = [];
  const label = (text, x, y, color) => {
    g.fillStyle = color;
    g.fillText(text, x, y);
    const m = g.measureText(text);
    labels.push({text, left: x, right: x + m.width, top: y - m.actualBoundingBoxAscent,
                 bottom: y + m.actualBoundingBoxDescent});
  };
  g.strokeStyle = '#888';
  g.lineWidth = 1;
  g.strokeRect(L, Tp, W - L - R, H - Tp - B);
  ticks.forEach((v) => label(tickLabel(v), 4, Y(v) + 4, '#333'));
  // The x ticks: a mark under the plot and the step, centred on it but kept inside the plot.
  const xTicks = stepTicks(maxStep);
  for (const t of xTicks) {
    g.beginPath();
    g.moveTo(X(t), H - B);
    g.lineTo(X(t), H - B + 4);
    g.stroke();
    const text = t.toLocaleString('en');
    label(text, Math.min(W - R - width(text), Math.max(L, X(t) - width(text) / 2)), H - B + 16, '#333');
  }
  label(s.metric === 'perplexity' ? (log ? 'perplexity (e^loss, log axis)' : 'perplexity (e^loss)')
                                  : (log ? 'loss (nats, log axis)' : 'loss (nats)'), L, H - 6, '#333');
  const steps = 'step';
  label(steps, W - R - width(steps), H - 6, '#333');
  // A curve through its finite points, broken where a value is not (a diverged step).
  const line = (pts, color, lineWidth) => {
    g.strokeStyle = color;
    g.lineWidth = lineWidth;
    g.beginPath();
    let open = false;
    for (const [step, v] of pts) {
      if (!finite(v)) {
        open = false;
        continue;
      }
      if (open) g.lineTo(X(step), Y(v));
      else g.moveTo(X(step), Y(v));
      open = true;
    }
    g.stroke();
  };
  // The baselines' labels at the right, kept 13 px apart when the two lines run close.
  let [uy, by] = [Y(s.unigram) + 4, Y(s.bigram) + 4];
  if (Math.abs(uy - by) < 13) [uy, by] = uy <= by ? [(uy + by) / 2 - 6.5, (uy + by) / 2 + 6.5]
                                                 : [(uy + by) / 2 + 6.5, (uy + by) / 2 - 6.5];
  baseline.forEach(([name, v, text], i) => {
    g.setLineDash([5, 4]);
    line([[0, v], [maxStep, v]], CHART[name], 1);
    g.setLineDash([]);
    label(text, W - R + 6, Math.min(H - B, Math.max(Tp + 10, i === 0 ? uy : by)), CHART[name]);
  });
  line(s.train, CHART.train, 1);
  line(s.smooth, CHART.smooth, 2);
  line(s.val, CHART.val, 2);
  g.fillStyle = CHART.val;
  for (const [step, v] of s.val) {
    if (!finite(v)) continue;
    g.beginPath();
    g.arc(X(step), Y(v), 3, 0, 2 * Math.PI);
    g.fill();
  }
  chartDrawn = Object.assign(s, {
    log, width: W, height: H, dpr, mean_over: meanOver, plot: {left: L, top: Tp, right: W - R, bottom: H - B}, labels,
    x_ticks: xTicks, y_ticks: ticks.map(tickLabel),
    val_pixels: s.val.filter(([, v]) => finite(v)).map(([step, v]) => [X(step), Y(v)]),
  });
}

// ---- Sampling: one token a request, bars at every step -----------------------------------------
// The worker generates (the page stays free) one token a request, the prompt growing by the
// tokens drawn, so that the text appears as it is generated and the bars follow it: each step's
// next-token probabilities after temperature, top-k and top-p, the drawn token marked. Every
// step's bars are kept, so that afterwards hovering or clicking a generated token shows the bars
// of the step that drew it (a click keeps them).
let sampling = null;  // {prompt, n, steps: [{text, bars, chosen, rest}], text, pinned, hovered, stopped}

function drawBars(run, k) {
  const step = run.steps[k];
  if (!step) return;
  document.querySelectorAll('#sm-text .tok.current').forEach((t) => t.classList.remove('current'));
  const span = document.querySelector(`#sm-text .tok[data-step="${k}"]`);
  if (span) span.classList.add('current');
  const label = (token) => esc(JSON.stringify(token));
  const bar = (cls, token, p, text, extra) =>
      `<div class="bar${cls}" data-token="${esc(token)}" data-p="${p}"${extra || ''}>` +
      `<span class="tok">${text}</span><span class="fill" style="width:${(p * 300).toFixed(1)}px"></span>` +
      `${fmt(p, 4)}</div>`;
  const c = step.chosen, inBars = c.rank < step.bars.length;
  let html = step.bars.map((b, i) => (b.p > 0 || i === c.rank
      ? bar(i === c.rank ? ' chosen' : '', b.token, b.p, (i === c.rank ? '▶ ' : '') + label(b.token)) : '')).join('');
  if (!inBars) html += bar(' chosen', c.token, c.p, `▶ ${label(c.token)}`, ` data-rank="${c.rank}"`);
  // The rest: every token not drawn above, those of the bars that top-k or top-p left at 0 too.
  const others = step.rest.tokens + step.bars.filter((b, i) => b.p === 0 && i !== c.rank).length;
  html += `<div class="bar rest" data-p="${step.rest.p}" data-tokens="${others}">` +
      `<span class="tok">the other ${others}</span><span class="fill" style="width:` +
      `${(step.rest.p * 300).toFixed(1)}px"></span>${fmt(step.rest.p, 4)}</div>`;
  const before = (run.prompt + run.steps.slice(0, k).map((s) => s.text).join('')).slice(-16);
  $('sm-step').textContent = `Step ${k + 1} of ${run.steps.length}${run.done ? '' : ' so far'}: the ` +
      `next-token probabilities after ${JSON.stringify(before)}, with temperature, top-k and top-p ` +
      `applied; ▶ marks the token drawn, ${JSON.stringify(c.token)} (p ${fmt(c.p, 4)}, ` +
      `${c.rank === 0 ? 'the most likely' : `number ${c.rank + 1} by probability`}). ` +
      (run.done ? 'Hover or click a generated token for its step.' : '');
  $('sm-bars').innerHTML = html;
  $('sm-bars').dataset.step = k;
}

// The step the bars show when no token is hovered: the one clicked, or the newest.
const restingStep = (run) => (run.pinned !== null ? run.pinned : run.steps.length - 1);

async function sampleText() {
  showError('sm-error', null);
  const run = {prompt: $('sm-prompt').value, steps: [], text: '', pinned: null, hovered: null,
               stopped: false, done: false};
  let seed;
  try {
    run.n = wholeNumber('sm-length', 'tokens', 'sample a longer text with the command line (attograd sample)');
    const typed = $('sm-seed').value.trim();
    seed = typed === '' ? undefined : wholeNumber('sm-seed', 'seed');
  } catch (e) {
    showError('sm-error', e);
    return;
  }
  const settings = {temperature: +$('sm-temperature').value, top_k: +$('sm-topk').value,
                    top_p: +$('sm-topp').value, bars: 8};
  sampling = run;
  $('sm-text').innerHTML = `<span class="prompt">${esc(run.prompt)}</span>`;
  delete $('sm-bars').dataset.step;  // the bars of the last sample go, and so does their step
  $('sm-bars').innerHTML = '';
  $('sm-step').textContent = '';
  $('sm-go').disabled = true;
  $('sm-stop').disabled = false;
  try {
    while (run.steps.length < run.n && !run.stopped && sampling === run) {
      const request = Object.assign({prompt: run.prompt + run.text, max_new_tokens: 1}, settings);
      if (run.steps.length === 0 && seed !== undefined) request.seed = seed;
      const r = await workerCall('sample', request);
      if (sampling !== run) return;  // the model changed meanwhile
      const k = run.steps.length;
      if (k === 0) part3Succeeded();
      run.steps.push({text: r.text, bars: r.steps[0], chosen: r.chosen[0], rest: r.rest[0]});
      run.text += r.text;
      $('sm-text').insertAdjacentHTML('beforeend',
                                      `<span class="tok" data-step="${k}" tabindex="0">${esc(r.text)}</span>`);
      if (run.hovered === null) drawBars(run, restingStep(run));
    }
  } catch (e) {
    if (sampling === run) showError('sm-error', e);
  } finally {
    if (sampling === run) {
      run.done = true;
      if (run.steps.length > 0) drawBars(run, run.hovered !== null ? run.hovered : restingStep(run));
      $('sm-go').disabled = false;
      $('sm-stop').disabled = true;
    }
  }
}

function setupSampling() {
  const slider = (id, show) => {
    const update = () => ($(id + '-v').textContent = show(+$(id).value));
    $(id).addEventListener('input', update);
    update();
  };
  slider('sm-temperature', (v) => (v === 0 ? '0 (greedy)' : v));
  slider('sm-topk', (v) => (v === 0 ? 'off' : v));
  slider('sm-topp', (v) => (v >= 1 ? '1 (off)' : v));
  $('sm-go').addEventListener('click', sampleText);
  $('sm-stop').addEventListener('click', () => {
    if (sampling) sampling.stopped = true;
  });
  const stepOf = (event) => {
    const t = event.target.closest && event.target.closest('#sm-text .tok');
    return t ? +t.dataset.step : null;
  };
  const text = $('sm-text');
  const hover = (event) => {
    const k = stepOf(event);
    if (!sampling || k === null) return;
    sampling.hovered = k;
    drawBars(sampling, k);
  };
  text.addEventListener('mouseover', hover);
  text.addEventListener('focusin', hover);
  const leave = () => {
    if (!sampling) return;
    sampling.hovered = null;
    drawBars(sampling, restingStep(sampling));
  };
  text.addEventListener('mouseleave', leave);
  text.addEventListener('focusout', leave);
  text.addEventListener('click', (event) => {
    const k = stepOf(event);
    if (!sampling || k === null) return;
    sampling.pinned = sampling.pinned === k ? null : k;  // a second click lets the bars follow again
    drawBars(sampling, k);
  });
}

// Steps changed while a run goes: applied, the run now ends at the new count (the worker moves
// its target; the learning rate schedule keeps Build's end, as after a finished run); a count the
// run has passed is refused with the worker's message. When no run goes, Train reads the box.
async function stepsChanged() {
  if ($('tr-pause').disabled) return;
  try {
    const steps = trainingSteps();
    const tokensPerStep = baselines.options.batch_size * baselines.config.block_size;
    await workerCall('start', {target: steps, chunk: 10, tokensPerStep});
    runSteps = steps;
    showError('tr-error', null);
    $('tr-changed').textContent = `Steps applied to the run going on: it now ends at step ${steps}.`;
    requestChart();
  } catch (e) {
    showError('tr-error', e);
  }
}

function setupTraining() {
  $('tr-model').addEventListener('change', () => ($('tr-custom').hidden = $('tr-model').value !== 'custom'));
  $('tr-homework').addEventListener('click', applyHomework);
  $('tr-text').addEventListener('change', showChosenText);
  // Every box Build reads: a change is said at once (settingsChanged). Steps during a run is
  // applied instead: the run's end moves (stepsChanged).
  for (const id of ['tr-model', 'tr-text', 'tr-n_layer', 'tr-n_head', 'tr-n_embd'].concat(RUN_BOXES.map((b) => b[1])))
    $(id).addEventListener(id === 'tr-model' || id === 'tr-text' ? 'change' : 'input', settingsChanged);
  $('tr-steps').addEventListener('change', stepsChanged);
  $('tr-file').addEventListener('change', () => readChosenFile($('tr-file'), (file, bytes) => {
    showError('tr-error', null);
    chosenText = {bytes, name: file.name};
    showChosenText();
    settingsChanged();
  }));
  $('tr-file-clear').addEventListener('click', () => {
    chosenText = null;
    showChosenText();
    settingsChanged();
  });
  showChosenText();
  $('tr-build').addEventListener('click', buildModel);
  $('tr-start').addEventListener('click', async () => {
    showError('tr-error', null);
    if (!baselines) {
      showError('tr-error', 'This model was loaded from a checkpoint, which holds no text to train on: ' +
                'sample from it or look inside, or press Build to train a model on a text.');
      return;
    }
    if (builtWith !== null) {
      // Before the first Train, Steps counts too; after it, Build's steps are not the comparison.
      const trained = lastProgress !== null;
      const then = trained ? builtWith.withoutSteps : builtWith.withSteps;
      const now = builtSettings(!trained);
      if (now !== then) {
        showError('tr-error', `The settings changed since Build (${then} then; ${now} now): press Build ` +
                  'to make a model with them, or set them back to train this one.');
        return;
      }
    }
    try {
      const steps = trainingSteps();  // the model's other settings were taken at Build
      const tokensPerStep = baselines.options.batch_size * baselines.config.block_size;
      await workerCall('start', {target: steps, chunk: 10, tokensPerStep});
      runSteps = steps;
      part3Succeeded();
    } catch (e) {
      showError('tr-error', e);
      return;
    }
    $('tr-start').disabled = true;
    $('tr-pause').disabled = false;
  });
  $('tr-pause').addEventListener('click', async () => {
    await workerCall('pause');
    $('tr-pause').disabled = true;
    $('tr-start').disabled = !baselines || building;
  });
  $('tr-log').addEventListener('change', drawChart);
  $('tr-metric').addEventListener('change', drawChart);
  // A window moved to a screen of another pixel ratio: redrawn at the new one.
  matchMedia(`(resolution: ${window.devicePixelRatio}dppx)`).addEventListener('change', drawChart);
  drawChart();
  $('tr-save').addEventListener('click', async () => {
    try {
      const bytes = await workerCall('save');
      const a = document.createElement('a');
      a.href = URL.createObjectURL(new Blob([bytes], {type: 'application/octet-stream'}));
      a.download = 'ckpt.safetensors';
      a.click();
    } catch (e) {
      showError('tr-error', e);
    }
  });
  $('tr-load').addEventListener('change', () => readChosenFile($('tr-load'), async (file, bytes) => {
    showError('tr-error', null);
    const r = await workerCall('load', {bytes, name: file.name});
    part3Succeeded();
    const c = r.config;
    baselines = null;
    modelChanged(false);
    $('tr-info').textContent = `loaded ${file.name}: ${modelLine(c)}; sample from it or look inside. ` +
        'To train, build a model from a text.';
    $('tr-save').disabled = true;
    for (const id of ['sm-go', 'li-go']) $(id).disabled = false;
    drawChart();
  }));
  setupSampling();
}

// ---- Part 4: attention maps of the trained model -------------------------------------------------
// Each head's map, and on it the engine's "attention is not explanation" rows (the forward
// request's attribution, gpt/model/attribution.h): per query row t = 1 .. T-2, an outline on the
// key t attends to most and a dot on the key whose term, dropped from the head's output, changes
// the loss of predicting token t+1 most; hover a cell for its numbers. Then how often the two differ, as
// `attograd attention --attribution` prints it.
let lastAttribution = null;  // the last forward's attribution, for the tests
function setupLookInside() {
  $('li-go').addEventListener('click', async () => {
    showError('li-error', null);
    try {
      const r = await workerCall('forward', {prompt: $('li-prompt').value});
      lastAttribution = r.attribution;
      if (r.attention.length === 0) {
        $('li-maps').innerHTML = '<p>This model has no attention (bigram or average).</p>';
        $('li-legend').hidden = true;
        $('li-summary').textContent = '';
        return;
      }
      // A token as a header: escapes for the unprintable, '·' for a space (a blank cell says nothing).
      const label = (t) => JSON.stringify(t).slice(1, -1).replace(/ /g, '·') || '·';
      const marks = new Map(r.attribution.rows.map((a) => [`${a.layer},${a.head},${a.query}`, a]));
      const nats = (x) => (x >= 0 ? '+' : '−') + Math.abs(x).toFixed(4);
      let html = '';
      r.attention.forEach((heads, l) => heads.forEach((rows, h) => {
        html += `<div class="map"><h4>layer ${l}, head ${h}</h4><table class="heat"><tr><th></th>` +
            r.tokens.map((t) => `<th>${esc(label(t))}</th>`).join('') + '</tr>';
        rows.forEach((row, q) => {
          const a = marks.get(`${l},${h},${q}`);
          html += `<tr><th>${esc(label(r.tokens[q]))}</th>` + row.map((w, k) => {
            const most = a && k === a.most_attended, change = a && k === a.largest_change;
            let title = hoverValue(w), cls = '', data = '', dot = '';
            if (most) {
              title += `\nmost-attended key of query ${q}: weight ${a.weight.toFixed(4)}`;
              cls += ' most';
              data += ' data-most="1"';
            }
            if (change) {
              title += `\nremoving this key changes the loss of predicting “${label(r.tokens[q + 1])}” ` +
                  `most: ${nats(a.change)} nats`;
              cls += ' change';
              data += ` data-change="${a.change}"`;
              dot = '<span class="dot"></span>';
            }
            const marked = most || change ? ` aria-label="${esc(title.replace(/\n/g, '; '))}"` : '';
            return `<td class="${cls.trim()}" title="${esc(title)}"${marked} data-w="${w}"${data} ` +
                `style="background: rgba(48, 96, 192, ${w.toFixed(3)})">${dot}</td>`;
          }).join('') + '</tr>';
        });
        html += '</table></div>';
      }));
      $('li-maps').innerHTML = html;
      const rows = r.attribution.rows;
      $('li-legend').hidden = rows.length === 0;
      $('li-summary').textContent = rows.length > 0
          ? `The most-attended key is not the one whose dropped term changes the loss most for ` +
            `${r.attribution.differ} of ${rows.length} (layer, head, query).`
          : `No outlines or dots: ${r.attribution.reason}.`;
    } catch (e) {
      // The maps of the previous prompt go with it: left drawn, they would look like this one's.
      lastAttribution = null;
      $('li-maps').innerHTML = '';
      $('li-legend').hidden = true;
      $('li-summary').textContent = '';
      showError('li-error', e);
    }
  });
}

// ---- Part 5: gradient checks ---------------------------------------------------------------------
function setupGradients() {
  const ops = engine.ops();
  $('gc-op').innerHTML = ops.map((o) => `<option>${o.name}</option>`).join('');
  const formula = () => {
    const o = ops.find((x) => x.name === $('gc-op').value);
    $('gc-formula').textContent = o ? `forward: ${o.forward.replace(/`/g, '')}   VJP: ${o.vjp.replace(/`/g, '')}` : '';
  };
  $('gc-op').addEventListener('change', formula);
  formula();
  $('gc-go').addEventListener('click', () => {
    showError('gc-error', null);
    try {
      const r = engine.gradcheck($('gc-op').value, $('gc-dtype').value);
      let html = `<tr><th>case</th><th>input</th><th>shape</th><th>max |analytic − numerical|</th>` +
          `<th>max relative</th><th>worst element</th><th>result</th></tr>`;
      for (const c of r.cases) {
        for (const i of c.inputs) {
          html += `<tr><td>${c.label}</td><td>${i.index}</td><td>(${i.shape.join(', ')})</td>` +
              `<td>${i.max_abs_err.toExponential(3)}</td><td>${i.max_rel_err.toExponential(3)}</td>` +
              `<td>${i.detail}</td><td class="${i.passed ? 'pass' : 'fail'}">${i.passed ? 'PASS' : 'FAIL'}</td></tr>`;
        }
      }
      html += `<tr><td colspan="7">central differences with eps = ${r.eps}, pass when the error ≤ ` +
          `atol ${r.atol} + rtol ${r.rtol} · |numerical|</td></tr>`;
      $('gc-table').innerHTML = html;
    } catch (e) {
      showError('gc-error', e);
    }
  });
}

// ---- Start -----------------------------------------------------------------------------------------
let engine = null;
window.page = {
  workerCall,
  get engine() { return engine; },
  // For the browser test (tests/web/browser_test.py): the last step the worker reported, the
  // chart and the sampling steps, the attribution rows part 4 last drew, the RoPE table's
  // [m, n, score] entries, and the order experiment with and without positions.
  trainingStep: () => (lastProgress ? lastProgress.step : 0),
  // What the chart drew last (series, margins, the canvas labels' boxes), and the sampling
  // run's steps as the worker answered them.
  chart: () => chartDrawn,
  // The chart's draws and the worker's reports so far (the draws are throttled to CHART_HZ a
  // second), the running mean the chart draws (for a known input), and the homework preset's
  // boxes as read from examples/train_pico.sh.
  chartCounts: () => ({draws: chartDraws, reports: progressReports, hz: CHART_HZ}),
  runningMean,
  homework: () => homeworkPreset(),
  // Build's answer (the config and the options the engine trains with).
  built: () => baselines,
  samplingSteps: () => (sampling ? sampling.steps : []),
  lastAttribution: () => lastAttribution,
  ropeScores: () => ropeGrid,
  orderExperiment() {
    const off = orderResults(false), on = orderResults(true);
    return {mean_same: off.mean_same && on.mean_same, attention_without_positions_same: off.attention_same,
            attention_with_positions_same: on.attention_same};
  },
  ready: loadAttograd().then((e) => {
    engine = e;
    $('status').textContent = `Engine ready (Highway target ${engine.info().target}).`;
    setupWorkbench();
    setupPositions();
    setupTraining();
    setupLookInside();
    setupGradients();
    runWorkbench();
    // A link to a part (a chapter's "part 4", #part4) was followed while the parts were still
    // empty, and the parts above it have grown since, pushing it down; go there again: to the
    // top of the window, or as far as the page scrolls (tests/web/site_test.py checks it).
    const linked = location.hash && document.getElementById(location.hash.slice(1));
    if (linked) linked.scrollIntoView();
    return true;
  }).catch((e) => {
    $('status').textContent = 'The engine failed to load: ' + e.message;
    throw e;
  }),
};
