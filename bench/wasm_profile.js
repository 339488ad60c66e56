'use strict';
// The page's engine training pico under V8's sampling profiler, for bench/wasm_profile.py, which
// relinks the module with function names and reads the profile this run writes to OUT:
//   node --no-experimental-fetch bench/wasm_profile.js MODULE_DIR TEXT STEPS OUT
// The profiler (node:inspector) runs over the timed steps only: the module's compilation, the
// model's set-up and the untimed steps are not in it.
// MODULE_DIR holds attograd_module.{js,wasm} and attograd.js; TEXT is the text pico trains on.
// The settings are examples/train_pico.sh's (batch 64, lr 1e-2 to 1e-3, warmup 200); evaluation
// is left out: the profile is of training steps, after 200 untimed ones.
const fs = require('node:fs');
const inspector = require('node:inspector');
const path = require('node:path');

const [moduleDir, textPath, stepsText, out] = process.argv.slice(2);
const createAttogradModule = require(path.resolve(moduleDir, 'attograd_module.js'));
const {loadAttograd} = require(path.resolve(moduleDir, 'attograd.js'));
const text = fs.readFileSync(textPath, 'utf8');
const steps = Number(stepsText);

const session = new inspector.Session();
session.connect();
const post = (method, params = {}) => new Promise((resolve, reject) => {
  session.post(method, params, (error, result) => (error ? reject(error) : resolve(result)));
});

(async () => {
  const engine = await loadAttograd({factory: createAttogradModule});
  engine.newModel({preset: 'pico', text, batch_size: 64, learning_rate: 0.01, min_lr: 0.001,
                   warmup_steps: 200, max_steps: 200 + steps});
  engine.train(200);
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', {interval: 250});  // microseconds
  await post('Profiler.start');
  const start = Date.now();
  for (let done = 0; done < steps; done += 100) engine.train(Math.min(100, steps - done));
  const seconds = (Date.now() - start) / 1000;
  const {profile} = await post('Profiler.stop');
  fs.writeFileSync(out, JSON.stringify(profile));
  console.log(`trained ${steps} steps in ${seconds.toFixed(2)} s`);
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
