// The page's trainer, in a Web Worker so that the page never freezes (part 3). It owns one
// engine (attograd.js) and answers messages {id, method, args} with {id, result} or
// {id, error}; while a run is going it trains in chunks and posts {progress} between them, so
// that pause, evaluate and sample requests are served between chunks.
importScripts('attograd_module.js', 'attograd.js');

let engine = null;
const ready = loadAttograd().then((e) => (engine = e));
let run = null;  // {target, chunk, evalEvery, running}

function post(message) {
  self.postMessage(message);
}

function evaluate() {
  const r = engine.evaluate();
  return r;
}

// One chunk of steps, then yield to the message queue and go on while running.
function trainChunk() {
  if (!run || !run.running) return;
  const before = performance.now();
  const steps = Math.min(run.chunk, run.target - run.step);
  let result;
  try {
    result = engine.train(steps);
  } catch (e) {
    run.running = false;
    post({progress: {error: e.message}});
    return;
  }
  const seconds = (performance.now() - before) / 1000;
  run.step = result.step;
  const progress = {
    step: result.step,
    target: run.target,
    losses: result.losses,
    tokens_per_second: (steps * run.tokensPerStep) / seconds,
    seconds_per_step: seconds / steps,
  };
  if (run.step % run.evalEvery === 0 || run.step >= run.target) progress.eval = evaluate();
  if (run.step >= run.target) {
    run.running = false;
    progress.done = true;
  }
  post({progress});
  if (run.running) setTimeout(trainChunk, 0);
}

const methods = {
  info: () => engine.info(),
  newModel(options) {
    run = null;
    const {bytes, name, ...request} = options;  // a dropped file's bytes and name, or a text
    return bytes ? engine.newModelFromBytes(bytes, request, name) : engine.newModel(request);
  },
  start({target, chunk, evalEvery, tokensPerStep}) {
    if (run && run.running) return {step: run.step};
    run = Object.assign(run || {step: 0}, {target, chunk, evalEvery, tokensPerStep, running: true});
    setTimeout(trainChunk, 0);
    return {step: run.step};
  },
  pause() {
    if (run) run.running = false;
    return {step: run ? run.step : 0};
  },
  evaluate: () => evaluate(),
  forward: ({prompt}) => engine.forward(prompt),
  sample: (options) => engine.sample(options),
  save: () => engine.saveCheckpoint(),
  load({bytes, name}) {
    run = null;
    return engine.loadCheckpoint(bytes, name);
  },
};

self.onmessage = async (event) => {
  const {id, method, args} = event.data;
  try {
    await ready;
    if (!Object.prototype.hasOwnProperty.call(methods, method)) throw new Error('no method ' + method);
    post({id, result: methods[method](args || {})});
  } catch (e) {
    post({id, error: e.message || String(e)});
  }
};
