// Fuzz target: `attograd train --config`'s reader (gpt/train/run_config.h) on a file's text.
//
// Properties:
// - refused: std::invalid_argument whose message starts with the file's name (any other
//   exception is a crash);
// - accepted: the effective config it writes (run_config_json, the run.json beside each
//   checkpoint) is read back as the same settings, written again byte for byte alike; every
//   value lies in its row's range (validate_fields over each of the three tables; the rules
//   between fields, such as n_head dividing n_embd, are start()'s to check).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "gpt/io/fields.h"
#include "gpt/train/run_config.h"
#include "tests/fuzz/fuzz_support.h"

using namespace attograd;
using namespace attograd::gpt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string what = "config file 'fuzz.json'";
  RunConfig config;
  try {
    config = parse_run_config(text, what);
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with(what),
               std::string("the message does not name the file: ") + e.what());
    return 0;
  }
  const std::string written = run_config_json(config);
  RunConfig again;
  try {
    again = parse_run_config(written, "run.json");
  } catch (const std::invalid_argument& e) {
    fuzz::fail("the config it writes is refused: " + std::string(e.what()) + "\n" + written);
  }
  FUZZ_CHECK(run_config_json(again) == written, "written, read and written again differs:\n" +
                                                    written + "\n" + run_config_json(again));
  FUZZ_CHECK(again.run_given == config.run_given && again.train_given == config.train_given &&
                 again.request.config.given == config.request.config.given &&
                 again.preset_given == config.preset_given,
             "the settings given differ after a round trip:\n" + written);
  // Every value in its row's range, as validate() checks each field (the defaults of the rows
  // not given are in range too).
  try {
    validate_fields(config.request, "run");
    validate_fields(config.request.config.values, "model");
    validate_fields(config.request.options, "train");
  } catch (const std::invalid_argument& e) {
    fuzz::fail(std::string("accepted a value outside its range: ") + e.what() + "\n" + written);
  }
  return 0;
}
