// Prepended (--pre-js) to the wasm test programs that CTest runs under node: the program's
// getenv sees node's environment, as a native program would see the shell's. Emscripten gives a
// program an environment of its own (ENV) by default; CTest passes BOOST_TEST_LOG_LEVEL, run
// filters and ATTOGRAD_SKIP_EXIT_CODE through the environment.
Module['preRun'] = Module['preRun'] || [];
Module['preRun'].push(function () {
  if (typeof process === 'object' && process.env) Object.assign(ENV, process.env);
});
