// The companion page's one entry point into the engine (attograd_api.cc says why one C function
// with JSON in and out). Compiled into the WebAssembly module the page loads, and natively into
// attograd_api_native (api_native.cc), so that the same requests can be answered by both builds
// and their numbers compared (tests/web/parity_test.js).
#pragma once

/// Answers `request`, a UTF-8 JSON object {"cmd": ..., fields} (the commands are listed in
/// attograd_api.cc and web/README.md), with {"ok": answer} or {"error": message}: UTF-8 JSON,
/// valid until the next call. Never throws; not thread-safe (one model per process).
extern "C" const char* attograd_call(const char* request);
