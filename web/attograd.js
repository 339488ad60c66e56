// attograd in JavaScript: the page's (and the tests') API over the WebAssembly module
// attograd_module.js, whose one function attograd_call takes and returns JSON
// (web/attograd_api.cc says why). Every method calls the engine; none does maths of its own.
// An error of the engine (a ragged Q, a non-UTF-8 text, a truncated checkpoint, a prompt
// longer than the context) is thrown as an AttogradError carrying the engine's message.
//
// A classic script, so that a page (<script>), a Web Worker (importScripts) and node
// (require) all load it: loadAttograd() resolves to the API once the module is compiled.
(function (root) {
  'use strict';

  class AttogradError extends Error {
    constructor(message) {
      super(message);
      this.name = 'AttogradError';
    }
  }

  // JSON has no Infinity or NaN: JSON.stringify writes them as null, which the engine would read
  // as "not given" and answer with a default (a temperature of Infinity sampled at 1). So every
  // number of a request must be finite; the path names the field ("sample: temperature").
  function checkFinite(value, path) {
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new AttogradError(`${path} is ${value}: give a finite number (JSON, which carries ` +
                              'requests to the engine, has no Infinity or NaN)');
    if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value))
      for (const [k, v] of Object.entries(value))
        checkFinite(v, Array.isArray(value) ? `${path}[${k}]` : `${path}.${k}`);
  }

  function wrap(module) {
    const call = (request) => {
      for (const [k, v] of Object.entries(request)) checkFinite(v, `${request.cmd}: ${k}`);
      // The request goes through the heap, not as ccall's 'string' argument: emscripten copies
      // that onto its 5 MB stack unchecked, and a request of 1.3 million characters (a long
      // paste into a box) overwrote the heap and broke the engine until the page was reloaded.
      const json = JSON.stringify(request);
      const size = module.lengthBytesUTF8(json) + 1;
      const at = module._malloc(size);
      if (!at) throw new AttogradError(`${request.cmd}: a request of ${size} bytes does not fit in ` +
                                       "the engine's memory: give it less text");
      let replyText;
      try {
        module.stringToUTF8(json, at, size);
        replyText = module.ccall('attograd_call', 'string', ['number'], [at]);
      } finally {
        module._free(at);
      }
      const reply = JSON.parse(replyText);
      if (Object.prototype.hasOwnProperty.call(reply, 'error')) throw new AttogradError(reply.error);
      return reply.ok;
    };
    // Bytes in and out of the module's in-memory file system, where the engine reads and writes
    // its files exactly as the CLI does on disk. A dropped file keeps its name there, so that the
    // engine's messages name the file the student chose.
    const withFile = (bytes, name, use) => {
      const dir = '/uploads';
      if (!module.FS.analyzePath(dir).exists) module.FS.mkdir(dir);
      name = String(name || 'file').replace(/[\/\0]/g, '_') || 'file';
      const path = dir + '/' + name;
      module.FS.writeFile(path, bytes);
      try {
        return use(path);
      } catch (e) {
        // The engine names the file by its path in the module; the student knows it by its name.
        if (e instanceof AttogradError) throw new AttogradError(e.message.split(path).join(name));
        throw e;
      } finally {
        module.FS.unlink(path);
      }
    };
    return {
      module,
      call,
      /** Highway target, presets, model kinds. */
      info: () => call({cmd: 'info'}),
      /** The workbench: {Q, K, V} as text ("1,0; 0,1"), {scale, causal, softmax_by, heads}
       *  (heads > 1: each head's steps in `heads`, Z their concat). */
      attention: (options) => call(Object.assign({cmd: 'attention'}, options)),
      /** nn::sinusoidal_table(T, n_embd): {T, n_embd, table}. */
      positions: (T, n_embd) => call({cmd: 'positions', T, n_embd}),
      /** q and k (text: one row of an even length, "1, 0.5") rotated to positions m and n; per
       *  channel pair, its θ and its angles at m and n (`pairs`, the dials). */
      rope: (q, k, m, n) => call({cmd: 'rope', q, k, m, n}),
      /** The lecture's toy embeddings of `words` (dog, bites, man), with or without the
       *  sinusoidal table: their mean and unmasked self-attention's output per word. */
      order: (words, positions) => call({cmd: 'order', words, positions}),
      /** A fresh model on a text: {kind, preset, n_layer, n_head, n_embd, block_size, text,
       *  seed, batch_size, learning_rate, ...}; returns its config and the baselines. */
      newModel: (options) => call(Object.assign({cmd: 'model_new'}, options)),
      /** The same from the bytes of a file named `name` (checked as UTF-8 by the engine). */
      newModelFromBytes: (bytes, options, name) =>
          withFile(bytes, name || 'text.txt',
                   (path) => call(Object.assign({}, options, {cmd: 'model_new', text_file: path}))),
      /** `steps` optimizer steps; each step's training loss. */
      train: (steps) => call({cmd: 'train', steps}),
      /** Train and val loss and perplexity over fixed batches. */
      evaluate: () => call({cmd: 'evaluate'}),
      /** Tokens, attention weights [layer][head][query][key], next-token probabilities, and
       *  attribution: {rows: [{layer, head, query, most_attended, weight, largest_change,
       *  change, differ}], differ, reason} (attograd attention --attribution's comparison). */
      forward: (prompt) => call({cmd: 'forward', prompt}),
      /** {prompt, max_new_tokens, temperature, top_k, top_p, seed, bars}: the text, and per step
       *  its bars (steps), the token drawn with its probability and rank (chosen) and the rest's
       *  probability and count (rest). */
      sample: (options) => call(Object.assign({cmd: 'sample'}, options)),
      /** Every op with its formulas and gradcheck cases. */
      ops: () => call({cmd: 'ops'}),
      /** One op's analytic VJP against central differences, per case and input. */
      gradcheck: (op, dtype) => call({cmd: 'gradcheck', op, dtype: dtype || 'f64'}),
      /** The model as the CLI's checkpoint file (safetensors), as bytes. */
      saveCheckpoint() {
        const path = '/tmp/attograd_out.safetensors';
        call({cmd: 'save', path});
        const bytes = module.FS.readFile(path);
        module.FS.unlink(path);
        return bytes;
      },
      /** A checkpoint's bytes (one the CLI wrote, or saveCheckpoint's), from a file `name`. */
      loadCheckpoint: (bytes, name) =>
          withFile(bytes, name || 'ckpt.safetensors', (path) => call({cmd: 'load', path})),
    };
  }

  /** Resolves to the API. options.factory: createAttogradModule (found globally by default);
   *  options.moduleArgs: emscripten module settings (e.g. locateFile). */
  async function loadAttograd(options) {
    options = options || {};
    const factory = options.factory || root.createAttogradModule;
    if (typeof factory !== 'function')
      throw new Error('attograd_module.js is not loaded: load it before attograd.js');
    return wrap(await factory(options.moduleArgs || {}));
  }

  const api = {loadAttograd, AttogradError};
  if (typeof module === 'object' && module.exports) module.exports = api;
  else Object.assign(root, api);
})(typeof self !== 'undefined' ? self : this);
