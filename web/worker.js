// The page's trainer, in a Web Worker so that the page never freezes (part 3). It owns one
// engine (attograd.js) and answers messages {id, method, args} with {id, result} or
// {id, error}; while a run is going it trains in chunks of about 50 ms and posts {progress}
// after each, so that pause, evaluate and sample requests are served between chunks.
importScripts('attograd_module.js', 'attograd.js');

let engine = null;
const ready = loadAttograd().then((e) => (engine = e));
// {step, target, chunk (most steps a call), steps (the next call's), nextEval (the step of the
//  next evaluation, the engine's schedule: train_pico.sh's eval_interval and eval_early), running}
let run = null;

function post(message) {
  self.postMessage(message);
}

function evaluate() {
  const r = engine.evaluate();
  if (run) run.nextEval = r.next_eval;
  return r;
}

// Yielding to the message queue between chunks, so that pause, evaluate and sample requests
// are served: through a MessageChannel rather than setTimeout(0), which browsers clamp to 4 ms
// once timers nest (the pico homework's 20,000 steps would wait 8 s in timers).
const channel = new MessageChannel();
channel.port1.onmessage = () => trainChunk();
const yieldThenTrain = () => channel.port2.postMessage(null);

// Steps in calls of run.steps (at most run.chunk), for about 50 ms or up to the next evaluation
// (the engine's next_eval; the end of the run too), then one progress message and a yield; while
// running. A run's first chunk is the step-0 evaluation alone, as `attograd train` starts, so
// that the val curve starts where training does.
function trainChunk() {
  if (!run || !run.running) return;
  const before = performance.now();
  const losses = [];
  let evaluation = null;
  try {
    if (run.step === 0 && !run.evaluatedAtStart) {
      run.evaluatedAtStart = true;
      evaluation = evaluate();
    }
    while (!evaluation) {
      const due = run.nextEval;  // 0: no evaluation due before the end
      const toEval = due > run.step ? due - run.step : Infinity;
      const call = performance.now();
      const result = engine.train(Math.min(run.steps, run.target - run.step, toEval));
      // The steps of the next call: as many as take about 10 ms, at most run.chunk, at least one,
      // so that a bigger model (whose 10 steps may take a second) still answers Pause at once.
      const perStep = (performance.now() - call) / result.losses.length;
      run.steps = Math.max(1, Math.min(run.chunk, Math.floor(10 / Math.max(perStep, 1e-3))));
      run.step = result.step;
      run.nextEval = result.next_eval;
      losses.push(...result.losses);
      if (run.step === due || run.step >= run.target) {
        evaluation = evaluate();
        break;
      }
      if (performance.now() - before >= 50) break;
    }
  } catch (e) {
    // A diverged run (the engine refuses a non-finite loss): the steps this chunk did take still
    // go to the chart, which shows the climb before the refusal.
    run.running = false;
    post({progress: {error: e.message, step: run.step, losses}});
    return;
  }
  const seconds = (performance.now() - before) / 1000;
  const progress = {
    step: run.step,
    target: run.target,
    losses,
    tokens_per_second: (losses.length * run.tokensPerStep) / seconds,
    seconds_per_step: losses.length ? seconds / losses.length : 0,
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
  // Train, and Steps changed during a run (which moves the running run's end).
  start({target, chunk, tokensPerStep}) {
    // A run that has reached its step count (or a count lowered below the steps done) has no
    // step left to take: say so and how to go on, rather than ask the engine for 0 or -150 steps.
    if (run && target <= run.step)
      throw new Error(`This model has trained ${run.step} steps, and Steps is ${target}: the run has ` +
                      `reached its step count. To go on training it, raise Steps above ${run.step} and ` +
                      'press Train (its learning rate stays at the floor its cosine decay reached, as ' +
                      'attograd train --resume with a larger --steps does); Build starts a new model.');
    if (run && run.running) {
      run.target = target;
      return {step: run.step};
    }
    run = Object.assign(run || {step: 0, steps: 1, nextEval: 0}, {target, chunk, tokensPerStep, running: true});
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
