// The page's trainer, in a Web Worker so that the page never freezes (part 3). It owns one
// engine (attograd.js) and answers messages {id, method, args} with {id, result} or
// {id, error}; while a run is going it trains in chunks of about 50 ms and posts {progress}
// after each, so that pause, evaluate and sample requests are served between chunks.
importScripts('attograd_module.js', 'attograd.js');

let engine = null;
const ready = loadAttograd().then((e) => (engine = e));
let run = null;  // {step, target, chunk (most steps a call), steps (the next call's), evalEvery, running}

function post(message) {
  self.postMessage(message);
}

function evaluate() {
  const r = engine.evaluate();
  return r;
}

// Yielding to the message queue between chunks, so that pause, evaluate and sample requests
// are served: through a MessageChannel rather than setTimeout(0), which browsers clamp to 4 ms
// once timers nest (the pico homework's 20,000 steps would wait 8 s in timers).
const channel = new MessageChannel();
channel.port1.onmessage = () => trainChunk();
const yieldThenTrain = () => channel.port2.postMessage(null);

// Steps in calls of run.steps (at most run.chunk), for about 50 ms or up to the next evaluation,
// then one progress message and a yield; while running.
function trainChunk() {
  if (!run || !run.running) return;
  const before = performance.now();
  const losses = [];
  let evaluation = null;
  try {
    do {
      const toEval = run.evalEvery - (run.step % run.evalEvery);
      const call = performance.now();
      const result = engine.train(Math.min(run.steps, run.target - run.step, toEval));
      // The steps of the next call: as many as take about 10 ms, at most run.chunk, at least one,
      // so that a bigger model (whose 10 steps may take a second) still answers Pause at once.
      const perStep = (performance.now() - call) / result.losses.length;
      run.steps = Math.max(1, Math.min(run.chunk, Math.floor(10 / Math.max(perStep, 1e-3))));
      run.step = result.step;
      losses.push(...result.losses);
      if (run.step % run.evalEvery === 0 || run.step >= run.target) {
        evaluation = evaluate();
        break;
      }
    } while (performance.now() - before < 50);
  } catch (e) {
    run.running = false;
    post({progress: {error: e.message}});
    return;
  }
  const seconds = (performance.now() - before) / 1000;
  const progress = {
    step: run.step,
    target: run.target,
    losses,
    tokens_per_second: (losses.length * run.tokensPerStep) / seconds,
    seconds_per_step: seconds / losses.length,
  };
  if (evaluation) progress.eval = evaluation;
  if (run.step >= run.target) {
    run.running = false;
    progress.done = true;
  }
  post({progress});
  if (run.running) yieldThenTrain();
}

const methods = {
  info: () => engine.info(),
  // A new model (built or loaded) ends the run of the old one; a refused one leaves the old model
  // and its run as they were (the engine replaces its model only on success), so the run is
  // dropped only after the engine has answered.
  newModel(options) {
    const {bytes, name, ...request} = options;  // a dropped file's bytes and name, or a text
    const result = bytes ? engine.newModelFromBytes(bytes, request, name) : engine.newModel(request);
    run = null;
    return result;
  },
  start({target, chunk, evalEvery, tokensPerStep}) {
    if (run && run.running) return {step: run.step};
    // A run that has reached its step count (or a count lowered below the steps done) has no
    // step left to take: say so and how to go on, rather than ask the engine for 0 or -150 steps.
    if (run && target <= run.step)
      throw new Error(`This model has trained ${run.step} steps, and Steps is ${target}: the run has ` +
                      `reached its step count. To go on training it, raise Steps above ${run.step} and ` +
                      'press Train (its learning rate stays at the floor its cosine decay reached, as ' +
                      'attograd train --resume with a larger --steps does); Build starts a new model.');
    run = Object.assign(run || {step: 0, steps: 1}, {target, chunk, evalEvery, tokensPerStep, running: true});
    yieldThenTrain();
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
    const result = engine.loadCheckpoint(bytes, name);
    run = null;
    return result;
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
