// A training run's config file: `attograd train --config run.json`, and the effective config each
// run writes beside its checkpoint (RunDir::kConfig), which --config takes back to repeat the run.
// Its keys are the names of the three field tables (RunRequest's, GPTConfig's, TrainOptions'), so
// no setting is listed here: a row added to a table is a key of the file with no edit.
//
// The file is JSON, one object with up to three sections, each optional, each key optional:
//
//   {"run":   {"corpus": "kjv", "tokenizer": "char", "model": "gpt", "init_seed": 1337, ...},
//    "model": {"preset": "nano", "n_layer": 4, "dropout": 0.1, ...},
//    "train": {"max_steps": 5000, "batch_size": 32, "learning_rate": 0.001, ...}}
//
//   run    RunRequest's rows (gpt/train/run.h) but resume and overwrite, which say on each command
//          line what to do with a run directory (kNotInConfigFiles)
//   model  "preset", and GPTConfig's rows (gpt/model/config.h) but vocab_size, the tokenizer's
//   train  TrainOptions' rows that have a flag (gpt/train/trainer.h); the others the run sets
//
// Sections rather than nanoGPT's flat keys: the tables share names (block_size is the model's
// context in "model" and nothing a user sets in "train"; corpus is the spec asked for in "run").
// Values are read strictly, in the ranges the flags check: an integer where an integer belongs
// (2.0 is refused), an enum by name, a path to write without control characters; a key twice,
// an unknown key (with the nearest known one suggested) or section is refused.
#pragma once

#include <map>
#include <set>
#include <string>

#include "gpt/train/run.h"

namespace attograd::gpt {

/// A run's settings and which of them were given: by a config file, by the command line, or
/// both, the command line's over the file's (overlay).
struct RunConfig {
  RunRequest request;                 // the defaults, with the given values
  std::set<std::string> run_given;    // RunRequest rows given (their names)
  std::set<std::string> train_given;  // TrainOptions rows given; the model's: request.config.given
  bool preset_given = false;
  /// The rows a config file gave and the command line did not, as "section.key" ("model.n_layer",
  /// "model.preset"), each with the file's name as parse_run_config was given it: a refusal names
  /// a row by the key the user wrote, not by a flag they did not type.
  std::map<std::string, std::string> from_file;

  /// The request to start(), checked as the command line's options are: with init_from, no
  /// preset, model or init_seed (the file decides the model); with resume, only the resumable
  /// rows of RunRequest's table, TrainOptions' rows (the library compares them with the
  /// checkpoint's) and no model setting. Throws std::invalid_argument naming the flags given and
  /// the keys of the config file (from_file).
  /// options_given is train_given.
  RunRequest checked_request() const;
};

/// Reads a config file's text strictly (see the top of this header); `what` names it in errors
/// ("config file 'run.json'"). Throws std::invalid_argument: not JSON, a duplicate key, not an
/// object, an unknown section or key ("config file 'run.json': \"train\" has no key 'bach_size'
/// (did you mean 'batch_size'?); its keys are ..."), vocab_size in "model", a wrong type or a
/// value out of range ("config file 'run.json': train: batch_size (--batch-size) is 0, expected
/// an integer in [1, 65536]").
RunConfig parse_run_config(const std::string& text, const std::string& what);

/// parse_run_config of the file at `path`; throws std::invalid_argument when it does not exist,
/// is a directory or is over 1 MiB.
RunConfig read_run_config(const std::string& path);

/// `over` laid over `under`: each row given in `over` takes its value, the others `under`'s; the
/// given sets are their unions. The command line over a config file.
RunConfig overlay(const RunConfig& under, const RunConfig& over);

/// `config` as parse_run_config reads it: the rows it gives, each in its section (the preset
/// when preset_given), as indented JSON text. Reading it back gives the same values and the
/// same given sets.
std::string run_config_json(const RunConfig& config);

}  // namespace attograd::gpt
