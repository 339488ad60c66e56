#include "gpt/train/run_config.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gpt/io/json_fields.h"
#include "gpt/text/corpus.h"
#include "nn/io/strict_json.h"
#include "nn/io/utf8.h"

namespace attograd::gpt {

namespace {

constexpr const char* kSections[] = {"run", "model", "train"};

// The model section holds every GPTConfig row of a config file but vocab_size: the vocabulary is
// the tokenizer's, and `train` has no --vocab-size.
constexpr auto kModelRow = [](const auto& f) { return std::string_view(f.name) != "vocab_size"; };
constexpr auto kEveryRow = [](const auto&) { return true; };

// The keys a section of S's rows (those `keep` accepts) may hold.
template <class S, class Keep>
std::vector<std::string> keys_of(Keep keep) {
  std::vector<std::string> keys;
  S::for_each_field([&](const auto& f) {
    if (f.in_config_files() && keep(f)) keys.push_back(f.name);
  });
  return keys;
}

// The key of each of S's rows (those `keep` accepts) under its flag's spelling as a JSON key:
// "lr" -> "learning_rate" (--lr), "no_bias" -> "bias" (--no-bias). A user who writes the flag's
// name is told the key (the nearest name by spelling would not find learning_rate from lr).
template <class S, class Keep>
std::map<std::string, std::string> flag_keys_of(Keep keep) {
  std::map<std::string, std::string> keys;
  S::for_each_field([&](const auto& f) {
    if (!f.in_config_files() || !keep(f)) return;
    std::string word = std::string(f.flag).substr(2);  // without "--"
    std::replace(word.begin(), word.end(), '-', '_');
    if (word != f.name) keys.emplace(word, f.name);
  });
  return keys;
}

// A section of a config file: its name, its keys, and its flag spellings (flag_keys_of).
struct SectionKeys {
  std::string name;
  std::vector<std::string> keys;
  std::map<std::string, std::string> flag_keys;
};

// Where a key written in the wrong place (at the top level, or in section `other_than`) belongs:
// the section that has it, and its name there (a flag's spelling, "lr", is the key
// "learning_rate"). Empty names when no other section has it.
struct KeyHome {
  std::string section, key;
};
KeyHome home_of(const std::string& key, const std::vector<SectionKeys>& sections,
                const std::string& other_than = "") {
  for (const SectionKeys& s : sections) {
    if (s.name == other_than) continue;
    if (std::find(s.keys.begin(), s.keys.end(), key) != s.keys.end()) return {s.name, key};
    if (const auto flag = s.flag_keys.find(key); flag != s.flag_keys.end())
      return {s.name, flag->second};
  }
  return {};
}

// Throws for a key of `section` (named `name`) that is not one of `known`, saying which section
// it belongs in when another has it, else suggesting the nearest; or for a section that is not
// an object.
void refuse_unknown_keys(const nlohmann::json& section, const std::string& name,
                         const std::vector<std::string>& known,
                         const std::map<std::string, std::string>& flag_keys,
                         const std::vector<SectionKeys>& sections, const std::string& what) {
  if (!section.is_object())
    throw std::invalid_argument(what + ": the section \"" + name + "\" is " +
                                nn::json_excerpt(section) + ", not a JSON object of settings");
  for (auto it = section.begin(); it != section.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
    if (name == "model" && it.key() == "vocab_size")
      throw std::invalid_argument(what +
                                  ": \"model\" cannot set vocab_size: the vocabulary is "
                                  "the tokenizer's (set \"tokenizer\" in \"run\")");
    if (const KeyHome home = home_of(it.key(), sections, name); !home.section.empty())
      throw std::invalid_argument(what + ": \"" + name + "\" has no key '" +
                                  nn::json_key_text(it.key()) + "': it is a setting of \"" +
                                  home.section + "\" ({\"" + home.section + "\": {\"" + home.key +
                                  "\": ...}})");
    const auto flag = flag_keys.find(it.key());
    const std::string near = flag != flag_keys.end() ? flag->second : nearest_name(it.key(), known);
    throw std::invalid_argument(what + ": \"" + name + "\" has no key '" +
                                nn::json_key_text(it.key()) + "'" +
                                (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                                "; its keys are " + join_names(known));
  }
}

// The rows `c` gives, as "section.key" ("run.init_seed", "model.preset", "train.max_steps"): the
// names RunConfig::from_file keeps.
std::vector<std::string> given_rows(const RunConfig& c) {
  std::vector<std::string> rows;
  for (const auto& [section, given] : {std::pair{"run", &c.run_given},
                                       {"model", &c.request.config.given},
                                       {"train", &c.train_given}})
    for (const std::string& key : *given) rows.push_back(std::string(section) + "." + key);
  if (c.preset_given) rows.push_back("model.preset");
  return rows;
}

// The rows of S named in `names` copied from `from` into `to`.
template <class S>
void copy_rows(S& to, const S& from, const std::set<std::string>& names) {
  S::for_each_field([&](const auto& f) {
    if (names.count(f.name)) to.*f.member = from.*f.member;
  });
}

}  // namespace

RunConfig parse_run_config(const std::string& text, const std::string& what) {
  nlohmann::json doc;
  try {
    doc = nn::parse_json(text, what);
  } catch (const std::runtime_error& e) {  // a user's file: bad input, as a bad flag is
    throw std::invalid_argument(e.what());
  }
  const std::vector<std::string> sections(std::begin(kSections), std::end(kSections));
  if (!doc.is_object())
    throw std::invalid_argument(what + " is " + nn::json_excerpt(doc) +
                                ", not a JSON object with the sections " +
                                join_names(sections, "and"));
  std::vector<std::string> model_keys = keys_of<GPTConfig>(kModelRow);
  model_keys.insert(model_keys.begin(), "preset");
  const std::vector<SectionKeys> section_keys = {
      {"run", keys_of<RunRequest>(kEveryRow), flag_keys_of<RunRequest>(kEveryRow)},
      {"model", model_keys, flag_keys_of<GPTConfig>(kModelRow)},
      {"train", keys_of<TrainOptions>(kEveryRow), flag_keys_of<TrainOptions>(kEveryRow)}};
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (std::find(sections.begin(), sections.end(), it.key()) == sections.end()) {
      // nanoGPT's configs are flat: a setting at the top level says which section it goes in.
      if (const KeyHome home = home_of(it.key(), section_keys); !home.section.empty())
        throw std::invalid_argument(what + ": '" + nn::json_key_text(it.key()) +
                                    "' is a setting of the \"" + home.section +
                                    "\" section, not a section: write {\"" + home.section +
                                    "\": {\"" + home.key + "\": ...}}");
      const std::string near = nearest_name(it.key(), sections);
      throw std::invalid_argument(what + " has no section '" + nn::json_key_text(it.key()) + "'" +
                                  (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                                  "; its sections are " + join_names(sections, "and"));
    }
  const nlohmann::json empty = nlohmann::json::object();
  const auto section = [&](const char* name) -> const nlohmann::json& {
    return doc.contains(name) ? doc.at(name) : empty;
  };
  for (const SectionKeys& s : section_keys)
    refuse_unknown_keys(section(s.name.c_str()), s.name, s.keys, s.flag_keys, section_keys, what);

  RunConfig c;
  c.run_given = read_config_section(section("run"), c.request, what + ": run", kEveryRow);
  c.request.config.given =
      read_config_section(section("model"), c.request.config.values, what + ": model", kModelRow);
  if (section("model").contains("preset")) {
    const nlohmann::json& p = section("model").at("preset");
    const std::vector<std::string> names = preset_names();
    if (!p.is_string() ||
        std::find(names.begin(), names.end(), p.get<std::string>()) == names.end())
      throw std::invalid_argument(what + ": model: preset (--preset) is " + nn::json_excerpt(p) +
                                  ", expected " + join_names(names));
    c.request.config.preset = p.get<std::string>();
    c.preset_given = true;
  }
  c.train_given =
      read_config_section(section("train"), c.request.options, what + ": train", kEveryRow);
  for (const std::string& row : given_rows(c)) c.from_file[row] = what;
  return c;
}

RunConfig read_run_config(const std::string& path) {
  // `--config pico` (nanoGPT's config/*.py habit, or a preset's name): the size is --preset's.
  const std::vector<std::string> presets = preset_names();
  if (std::error_code ec; std::find(presets.begin(), presets.end(), path) != presets.end() &&
                          !std::filesystem::exists(path, ec))
    throw std::invalid_argument("config file " + path +
                                " does not exist; --config reads a JSON file of settings, and the "
                                "model size " +
                                path + " is chosen with --preset " + path);
  std::string text;
  try {
    text = read_text_file(path, "config file", "give --config a JSON file of settings", 1 << 20,
                          HeldAs::text);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  return parse_run_config(text, "config file '" + nn::escape_controls(path) + "'");
}

RunConfig overlay(const RunConfig& under, const RunConfig& over) {
  RunConfig r = under;
  copy_rows(r.request, over.request, over.run_given);
  copy_rows(r.request.options, over.request.options, over.train_given);
  copy_rows(r.request.config.values, over.request.config.values, over.request.config.given);
  if (over.preset_given) r.request.config.preset = over.request.config.preset;
  r.run_given.insert(over.run_given.begin(), over.run_given.end());
  r.train_given.insert(over.train_given.begin(), over.train_given.end());
  r.request.config.given.insert(over.request.config.given.begin(), over.request.config.given.end());
  r.preset_given = under.preset_given || over.preset_given;
  // A row the command line gives is the command line's; over's own file rows stay named.
  for (const std::string& row : given_rows(over)) r.from_file.erase(row);
  r.from_file.insert(over.from_file.begin(), over.from_file.end());
  return r;
}

RunRequest RunConfig::checked_request() const {
  RunRequest rq = request;
  rq.options_given = train_given;
  // The refused rows: a flag by its name, a config file's key as "model.n_layer" with its file.
  std::vector<std::string> refused;
  std::map<std::string, std::vector<std::string>> refused_keys;  // file -> keys
  const auto refuse = [&](const std::string& key, std::string_view flag) {
    if (const auto it = from_file.find(key); it != from_file.end())
      refused_keys[it->second].push_back(key);
    else
      refused.emplace_back(flag);
  };
  const auto refusal = [&](const std::string& because, const std::string& file_fix) {
    std::vector<std::string> named = refused;
    for (const auto& [file, keys] : refused_keys)
      named.push_back(join_names(keys, "and") + " of " + file);
    return std::invalid_argument(because + "; " + join_names(named, "and") +
                                 " cannot be given with it" +
                                 (refused_keys.empty() ? "" : " (" + file_fix + ")"));
  };
  if (rq.init_from && !rq.resume) {
    // The file decides the model: these would be ignored (validate() refuses the config
    // options that would change its architecture, naming them).
    if (preset_given) refuse("model.preset", "--preset");
    RunRequest::for_each_field([&](const auto& f) {
      const std::string_view name = f.name;
      if (run_given.count(f.name) && (name == "model" || name == "init_seed"))
        refuse("run." + std::string(name), f.flag);
    });
    if (!refused.empty() || !refused_keys.empty())
      throw refusal("--init-from takes the model from " + *rq.init_from,
                    "remove them from the file");
  }
  if (!rq.resume) return rq;
  // A resumed run keeps what its checkpoint stored rather than silently ignoring what was
  // asked: the model's settings, and the request's rows that are not kResumable (overwrite is
  // refused by validate(), with a message of its own). TrainOptions' rows are compared with the
  // checkpoint's by start().
  if (preset_given) refuse("model.preset", "--preset");
  GPTConfig::for_each_field([&](const auto& f) {
    if (request.config.has(f.name)) refuse("model." + std::string(f.name), f.flag);
  });
  RunRequest::for_each_field([&](const auto& f) {
    if (run_given.count(f.name) && !f.resumable() && std::string_view(f.name) != "overwrite")
      refuse("run." + std::string(f.name), f.flag);
  });
  if (!refused.empty() || !refused_keys.empty())
    throw refusal("--resume continues a run with the model stored in its checkpoint",
                  "remove them from the file; --resume --out DIR alone continues a run with the "
                  "settings its checkpoint stored");
  return rq;
}

std::string run_config_json(const RunConfig& c) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  doc["run"] = config_section_to_json(c.request,
                                      [&](const auto& f) { return c.run_given.count(f.name) > 0; });
  nlohmann::ordered_json model = nlohmann::ordered_json::object();
  if (c.preset_given) model["preset"] = c.request.config.preset;
  model.update(config_section_to_json(c.request.config.values, [&](const auto& f) {
    return kModelRow(f) && c.request.config.has(f.name);
  }));
  doc["model"] = model;
  doc["train"] = config_section_to_json(
      c.request.options, [&](const auto& f) { return c.train_given.count(f.name) > 0; });
  return doc.dump(2) + "\n";
}

}  // namespace attograd::gpt
