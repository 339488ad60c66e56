#include "gpt/train/run.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autograd/kernels/thread_pool.h"
#include "gpt/io/json_fields.h"
#include "gpt/io/sha256.h"
#include "gpt/model/bigram_average.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/text/corpus.h"
#include "gpt/train/interrupt.h"
#include "gpt/train/prepare.h"
#include "gpt/train/report.h"
#include "gpt/train/run_config.h"
#include "gpt/train/run_dir.h"
#include "gpt/train/run_logs.h"
#include "nn/io/atomic_file.h"
#include "nn/io/utf8.h"

namespace attograd::gpt {

ResumedRun resume_run(const std::string& out_dir, const std::string& hint) {
  const std::string path = (std::filesystem::path(out_dir) / kCheckpointFile).string();
  if (!std::filesystem::exists(path))
    throw std::invalid_argument("nothing to resume: " + path + " does not exist" + hint);
  const nn::SafetensorsFile file = nn::SafetensorsFile::read(path);
  // From the header, before the moments (two copies of the weights) are read.
  require_training_memory(file, "train --resume");
  CheckpointInfo info = read_checkpoint_info(file, Moments::load);
  if (!info.training) throw std::invalid_argument(path + " holds no training state to resume");
  ResumedRun r{open_checkpoint_file(file), std::move(*info.training), {}};
  r.options = TrainOptions::from_json(r.state.train_options);
  return r;
}

namespace {

// `path` as one word of a POSIX shell command: as it is when it holds only characters no shell
// treats specially, else in single quotes (each ' written '\'').
std::string shell_quoted(const std::string& path) {
  const bool plain = !path.empty() && std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./-+,:@%=", c) != nullptr;
  });
  if (plain) return path;
  std::string quoted = "'";
  for (char c : path) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Fresh runs write their logs, plots and checkpoint into out_dir, replacing files of those
// names: a directory that holds anything but our lock (the logs of a run killed before its first
// checkpoint, or files that are not ours) is refused without overwrite, naming what is there.
// A directory holding a checkpoint is left to the caller's own message (resume or overwrite).
void refuse_occupied_dir(const RunDir& dir) {
  const std::filesystem::path& out = dir.path();
  if (std::filesystem::exists(dir.checkpoint())) return;
  const std::string listed = nn::directory_listing(out, RunDir::kLock);
  if (listed.empty()) return;
  throw std::invalid_argument("--out " + out.string() + " already holds " + listed +
                              " but no checkpoint: pass --overwrite to start a run there (its "
                              "logs and plots are replaced), or choose another --out");
}

// Sizes the engine's pool for this rank: `threads`, or with 0 the CPUs this process may run on:
// all of them when the launcher gave the rank its own (mpirun's core per rank, srun's
// --cpus-per-task, --map-by ...:pe=N), and an equal share when ranks on one machine may all run
// on every CPU (unbound), rather than all CPUs each. More threads than CPUs is said: they would
// take turns.
void set_threads(int threads, const Communicator& comm, SetUpReport& report) {
  const int online = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  const int cpus = kernels::available_cpus();
  if (threads == 0) threads = cpus < online ? cpus : std::max(1, cpus / comm.local_size());
  kernels::set_num_threads(threads);
  if (threads > cpus) report.threads_beyond_cpus(threads, cpus, comm.size());
}

}  // namespace

std::string RunRequest::run_dir() const {
  if (out_dir) return *out_dir;
  return std::string("runs/") +
         (model == ModelKind::gpt ? config.preset : std::string(model_kind_name(model)));
}

void RunRequest::validate() const {
  validate_fields(*this, "train");
  if (init_from) {
    if (resume)
      throw std::invalid_argument(
          "--init-from starts a new run from a file's weights and --resume continues a run: "
          "choose one");
    if (model != ModelKind::gpt)
      throw std::invalid_argument("--model " + std::string(model_kind_name(model)) +
                                  " cannot be given with --init-from: the model is the one in " +
                                  *init_from);
    // The kKeepsWeights rows (a rate, the length of the training sequences, n_head for a file
    // without config.json) change no weight; every other field would build a model the file's
    // weights do not fit.
    std::vector<std::string> refused;
    GPTConfig::for_each_field([&](const auto& f) {
      if (config.has(f.name) && !f.keeps_weights()) refused.push_back(f.flag);
    });
    if (!refused.empty())
      throw std::invalid_argument(
          "train --init-from takes the model's config from " + nn::escape_controls(*init_from) +
          "; " + join_names(refused, "and") +
          " would change its architecture and cannot be given with it (--n-head for a Hugging "
          "Face file without config.json, --dropout and --block-size, the length of the "
          "training sequences, can)");
  }
  if (!resume) {
    options.validate();
    // A new model's sizes, checked before the corpus is read (the vocabulary's own check, the
    // parameter count, follows it in prepare_new).
    if (!init_from) check_config_before_vocab(config, model);
    return;
  }
  if (overwrite)
    throw std::invalid_argument(
        "--resume continues the run in --out and --overwrite starts it over: choose one");
  if (!config.given.empty())
    throw std::invalid_argument("train: a resumed run keeps the model its checkpoint stores; " +
                                join_names({config.given.begin(), config.given.end()}, "and") +
                                " cannot be overridden");
  std::set<std::string> rows;
  TrainOptions::for_each_field([&](const auto& f) {
    rows.insert(f.name);
    if (options_given.count(f.name)) check_field(f, options.*f.member, "train");
  });
  for (const std::string& name : options_given)
    if (!rows.count(name))
      throw std::invalid_argument("train: options_given names '" + name +
                                  "', which is not a training option");
}

namespace {

// The options a resumed run trains with: those stored in its checkpoint, with the kResumable
// rows the request gives. Any other row given must hold the stored value: the run keeps what it
// was trained with rather than silently ignoring what was asked.
TrainOptions resumed_options(const TrainOptions& stored, const RunRequest& rq) {
  TrainOptions options = stored;
  std::vector<std::string> resumable, changed;
  TrainOptions::for_each_field([&](const auto& f) {
    const std::string flag = f.flag != nullptr ? std::string(" (") + f.flag + ")" : "";
    if (f.resumable()) resumable.push_back(f.name + flag);
    if (!rq.options_given.count(f.name)) return;
    if (f.resumable())
      options.*f.member = rq.options.*f.member;
    else if (!(rq.options.*f.member == stored.*f.member))
      changed.push_back(f.name + flag + " is " +
                        json_field_of(f).write(stored).dump());  // an enum by its name
  });
  if (!changed.empty())
    throw std::invalid_argument(
        "--resume continues a run with the options stored in its checkpoint, and " +
        join_names(changed, "and") +
        " in its checkpoint; give the same value or leave it "
        "out (only " +
        join_names(resumable) + " may change)");
  // Extending a run keeps its schedule: the cosine still ends where it did (then min_lr),
  // rather than stretching to the new length and jumping back up.
  if (options.max_steps != stored.max_steps) options.lr_decay_steps = stored.decay_steps();
  return options;
}

// The run directory, made where absent, and the exclusive lock on <out>/.lock: two runs writing
// the same logs and checkpoint would interleave them. Many runs may start into one new --out at
// once, so making the directory and taking the lock is one step that none of them can spoil for
// another:
//  - a run is the maker of a directory only if its own mkdir(2) created it, and one the lock
//    refuses touches nothing, neither the directory nor the winner's lock file;
//  - a run holds the lock only once the descriptor it locked is still the file named
//    <out>/.lock (fstat against lstat). The holder of a lock that is refused during its set-up
//    unlinks the lock file before it closes it, so a run that opened the old file in between
//    would otherwise hold a lock on a file no later run sees; it opens the new name instead.
// Destroyed without keep(), as when start() throws after the lock is taken: the lock file and
// the directories this run made (each only if empty) are removed, so a refused run leaves
// nothing behind. The lock file is opened with O_NOFOLLOW (a symlink named .lock would have us
// create any file it names, as root anywhere) and O_CLOEXEC (a child, gnuplot, must not inherit
// the lock, or an orphan outliving a killed run would keep --resume out).
class RunDirLock {
 public:
  /// Makes `out` and the parents it lacks (runs/ of runs/nano) and locks <out>/.lock. Throws
  /// std::invalid_argument naming --out and the fix when a directory cannot be made, the lock
  /// file cannot be opened, or another run holds the lock.
  explicit RunDirLock(const RunDir& dir) : lock_path_(dir.lock()) {
    const std::filesystem::path& out = dir.path();
    // Bounded: each retry means another run removed the directory or lock file just then.
    constexpr int kAttempts = 100;
    for (int attempt = 1;; ++attempt) {
      make_directories(out);
      fd_ = ::open(lock_path_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0644);
      if (fd_ < 0) {
        const int err = errno;
        if (err == ENOENT && attempt < kAttempts) continue;  // removed since our mkdir
        remove_made_directories();
        if (err == ELOOP)
          throw std::invalid_argument("--out " + out.string() +
                                      ": .lock is a symbolic link, which a run never makes; "
                                      "remove it or choose another --out");
        throw std::invalid_argument("cannot write in --out " + out.string() + ": " +
                                    std::strerror(err));
      }
      if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd_);
        fd_ = -1;
        made_.clear();  // the directory is the holder's now, even if we made it
        throw std::invalid_argument("another `attograd train` is writing to " + out.string() +
                                    "; wait for it to finish or choose another --out");
      }
      struct stat held {
      }, named{};
      if (::fstat(fd_, &held) == 0 && ::lstat(lock_path_.c_str(), &named) == 0 &&
          held.st_dev == named.st_dev && held.st_ino == named.st_ino)
        return;
      ::close(fd_);  // a lock on an unlinked file: its holder gave up the directory
      fd_ = -1;
      if (attempt == kAttempts)
        throw std::invalid_argument("--out " + out.string() +
                                    ": could not take the lock while other runs kept removing "
                                    "it; start one run there at a time");
    }
  }
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  ~RunDirLock() {
    if (fd_ < 0) return;
    ::unlink(lock_path_.c_str());  // ours: the descriptor we hold names it (checked above)
    remove_made_directories();
    ::close(fd_);
  }
  /// The run goes ahead: the directory stays, and the caller holds the locked descriptor (the
  /// lock is released when it is closed).
  int keep() {
    made_.clear();
    return std::exchange(fd_, -1);
  }

 private:
  // mkdir(2) each missing directory from the top down, remembering those this call created.
  void make_directories(const std::filesystem::path& out) {
    std::vector<std::filesystem::path> missing;
    for (std::filesystem::path p = out; !p.empty(); p = p.parent_path()) {
      std::error_code ec;
      if (std::filesystem::is_directory(p, ec)) break;
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (::mkdir(it->c_str(), 0755) == 0) {
        made_.push_back(*it);
        continue;
      }
      int err = errno;
      std::error_code ec;
      if (err == EEXIST && std::filesystem::is_directory(*it, ec)) continue;  // another run's
      if (err == EEXIST) err = ENOTDIR;  // a file where a directory of the path should be
      remove_made_directories();
      throw std::invalid_argument("--out " + out.string() + ": cannot create the directory (" +
                                  std::error_code(err, std::generic_category()).message() +
                                  "); choose another --out");
    }
  }
  // Bottom up, each only if nothing else was written there (rmdir fails on a full one).
  void remove_made_directories() {
    for (auto it = made_.rbegin(); it != made_.rend(); ++it)
      if (::rmdir(it->c_str()) != 0) break;
    made_.clear();
  }

  std::filesystem::path lock_path_;
  std::vector<std::filesystem::path> made_;
  int fd_ = -1;
};

// The text of RunDir::kConfig: the effective config of the run start() set up, every
// setting after its config file and flags, which `train --config` reads back to repeat it. A
// fresh run's model section is the model built (the rows its kind reads), a fine-tuning run's
// the overrides given with --init-from (the file decides the rest); a resumed run keeps the
// model, model kind and init_seed of the file its first start() wrote (the checkpoint holds
// neither the preset nor the seed), and has none (nullopt, said on `log`) when that file is
// missing or unreadable.
std::optional<std::string> effective_run_config(const RunRequest& rq, const TrainOptions& options,
                                                const LanguageModel& model,
                                                const std::string& tokenizer_kind,
                                                const RunDir& dir, SetUpReport& report) {
  const std::filesystem::path path = dir.config();
  RunConfig c;
  RunRequest& e = c.request;
  e.out_dir = dir.path().string();
  e.corpus = options.corpus;  // as recorded: a relative path made absolute
  e.cache_dir = rq.cache_dir;
  e.keep_cr = options.keep_cr;
  e.tokenizer = tokenizer_kind;
  if (!options.init_from.empty()) e.init_from = options.init_from;
  e.model = model.kind();
  e.init_seed = rq.init_seed;
  e.threads = rq.threads;
  e.options = options;
  RunRequest::for_each_field([&](const auto& f) {
    if (f.in_config_files()) c.run_given.insert(f.name);
  });
  TrainOptions::for_each_field([&](const auto& f) {
    if (f.in_config_files()) c.train_given.insert(f.name);
  });
  if (!e.init_from) c.run_given.erase("init_from");
  if (rq.resume) {
    if (!std::filesystem::exists(path)) {
      report.note(path.string() +
                  " is missing (a run started by an older attograd): the effective config is not "
                  "written");
      return std::nullopt;
    }
    RunConfig base;
    try {
      base = read_run_config(path.string());
    } catch (const std::invalid_argument& error) {
      report.note(std::string(error.what()) + ": not rewritten");
      return std::nullopt;
    }
    e.config = base.request.config;
    c.preset_given = base.preset_given;
    e.model = base.request.model;
    e.init_seed = base.request.init_seed;
    for (const char* row : {"model", "init_seed"})
      if (!base.run_given.count(row)) c.run_given.erase(row);
  } else if (e.init_from) {
    e.config = rq.config;  // the overrides --init-from accepts; no preset
    c.run_given.erase("model");
    c.run_given.erase("init_seed");
  } else {
    c.preset_given = true;
    e.config.preset = rq.config.preset;
    e.config.values = model.config();
    GPTConfig::for_each_field([&](const auto& f) {
      if (f.in_config_files() && std::string_view(f.name) != "vocab_size" &&
          reads_field(model.kind(), f.name))
        e.config.given.insert(f.name);
    });
  }
  return run_config_json(c);
}

// The run directory, claimed: refused when it is a file, locked by rank 0 (the one writer; the
// other ranks only read the checkpoint to resume) into `lock`, refused where a fresh run would
// replace files without --overwrite, and swept of the temporaries an interrupted run left.
void claim_run_dir(const RunRequest& rq, const RunDir& dir, const Communicator& comm,
                   std::optional<RunDirLock>& lock, SetUpReport& report) {
  const std::string out = dir.path().string();
  if (std::filesystem::exists(dir.path()) && !std::filesystem::is_directory(dir.path()))
    throw std::invalid_argument("--out " + out + " exists and is not a directory");
  if (comm.is_root()) {
    lock.emplace(dir);
    dir.refuse_special_files();
    if (!rq.resume && !rq.overwrite) refuse_occupied_dir(dir);
  }
  const std::string ckpt = dir.checkpoint().string();
  if (!rq.resume && !rq.overwrite && std::filesystem::exists(ckpt))
    throw std::invalid_argument(ckpt +
                                " already exists: pass --resume to continue that run, "
                                "--overwrite to start over, or choose another --out");
  // A run killed while saving leaves its temporary checkpoint (or plot) behind. Every writer of
  // the run's files holds the lock we now hold, so the temporaries of those files are stale
  // whatever process now has their writer's pid; files of other names are not ours to touch.
  if (comm.is_root())
    for (const std::filesystem::path& stale :
         nn::remove_stale_temp_files(dir.path(), {.targets = RunDir::files(), .locked = true}))
      report.removed_stale(stale);
}

// The run --resume continues, read before the corpus (it records which): its model, tokenizer,
// training state and stored options.
ResumedRun read_resumed_run(const RunRequest& rq, const RunDir& dir) {
  const std::string run_dir = dir.path().string(), ckpt = dir.checkpoint().string();
  // Without --out the directory is runs/pico, which the run to continue may well not be.
  ResumedRun resumed =
      resume_run(run_dir, rq.out_dir ? std::string()
                                     : " (--resume without --out continues " + run_dir +
                                           "; name the run with --out, e.g. --out runs/nano)");
  if (rq.tokenizer && *rq.tokenizer != resumed.session.tokenizer->kind())
    throw std::invalid_argument("--tokenizer " + *rq.tokenizer + " does not match " + ckpt +
                                ", trained with '" + resumed.session.tokenizer->kind() +
                                "'; drop --tokenizer when resuming");
  if (!rq.corpus && resumed.options.corpus.empty())
    throw std::invalid_argument(ckpt +
                                " does not record the corpus it was trained on (an older "
                                "checkpoint); pass the same --corpus to resume it");
  return resumed;
}

// Where the run's text comes from: --corpus, else the corpus a resumed run records (`recorded`),
// else the default; read with its CR line ends as --keep-cr says, else as the run was trained.
struct CorpusSource {
  std::string spec;
  bool recorded = false;
  CorpusOptions options;
};

CorpusSource corpus_source(const RunRequest& rq, const TrainOptions* resumed_options,
                           std::ostream& log) {
  CorpusSource source{rq.corpus.value_or(kDefaultCorpus), false, {}};
  source.options.cache_dir = rq.cache_dir;
  source.options.keep_cr = rq.keep_cr.value_or(false);
  source.options.log = [&log](const std::string& line) { log << line << "\n" << std::flush; };
  if (resumed_options != nullptr) {
    if (!rq.corpus) source.spec = resumed_options->corpus, source.recorded = true;
    if (!rq.keep_cr) source.options.keep_cr = resumed_options->keep_cr;
  }
  return source;
}

Corpus read_corpus(const CorpusSource& source, const std::string& ckpt) {
  if (!source.recorded) return load_corpus(source.spec, source.options);
  try {
    return load_corpus(source.spec, source.options);
  } catch (const std::runtime_error& e) {  // a file moved since: say where the name came from
    throw std::runtime_error("the corpus recorded in " + ckpt + ": " + e.what() +
                             "; or pass --corpus with the same text");
  }
}

// A resumed run trains on the text it was trained on: the sha256 its checkpoint records.
void require_trained_corpus(const RunRequest& rq, const TrainOptions& options,
                            const CorpusSource& source, const Corpus& corpus,
                            const std::string& ckpt) {
  const std::string digest = sha256_hex(corpus.text);
  if (options.corpus_sha256.empty() || options.corpus_sha256 == digest) return;
  const std::string trained = "(sha256 " + options.corpus_sha256.substr(0, 16) + "...)";
  if (rq.keep_cr.value_or(false) && !options.keep_cr)
    throw std::invalid_argument(
        "--keep-cr reads the corpus with its CR line ends, but this run was trained on it "
        "with them made LF (keep_cr false in " +
        ckpt + "); leave --keep-cr out to resume");
  if (source.recorded)
    throw std::invalid_argument("the corpus '" + nn::escape_controls(source.spec) +
                                "' recorded in " + ckpt +
                                " has changed since the run was trained on it " + trained +
                                "; restore it, or pass --corpus with the text it had");
  throw std::invalid_argument(
      "this run was trained on corpus '" + nn::escape_controls(options.corpus) + "' " + trained +
      ", not on '" + nn::escape_controls(source.spec) +
      "'; pass the same --corpus to resume it, or none to use the recorded one" +
      (corpus.line_ends_normalized > 0 ? std::string(" (a run trained before CRLF line ends "
                                                     "were made LF needs --keep-cr)")
                                       : std::string()));
}

// The weights --init-from names, checked against the request; sets the options' sequence length
// (--block-size) and records the file in options.init_from.
Session open_init_from(const RunRequest& rq, TrainOptions& options, SetUpReport& report) {
  const ConfigOverrides& given = rq.config;
  InitWeights init = open_init_weights(
      *rq.init_from, given.has("n_head") ? given.values.n_head : 0,
      given.has("dropout") ? std::optional<double>(given.values.dropout) : std::nullopt);
  // A bigram's or average model's file reads no dropout: the rate would be ignored, so it is
  // refused as `train --model bigram --dropout` is.
  refuse_unused_overrides(given, init.session.kind(), init.session.path);
  if (rq.tokenizer && *rq.tokenizer != init.session.tokenizer->kind())
    throw std::invalid_argument("--tokenizer " + *rq.tokenizer + " does not match --init-from " +
                                init.session.path + ", whose model reads the '" +
                                init.session.tokenizer->kind() +
                                "' tokenizer's ids; drop --tokenizer");
  init.session.require_tokenizer_fits(
      init.hf_gpt2 ? " (a Hugging Face file carries no tokenizer and is read with GPT-2's BPE: "
                     "fine-tune a char model from its attograd checkpoint)"
                   : "");
  const int64_t context = init.session.config().block_size;
  if (given.has("block_size") && given.values.block_size > context)
    throw std::invalid_argument(
        "--block-size " + std::to_string(given.values.block_size) +
        " with --init-from sets the length of the training sequences, which cannot exceed "
        "the context of the model in " +
        init.session.path + " (block_size " + std::to_string(context) + ")");
  if (given.has("block_size")) options.block_size = given.values.block_size;
  report.init(init.describe());
  options.init_from = std::filesystem::absolute(init.session.path).lexically_normal().string();
  return std::move(init.session);
}

// A model continued (--resume, --init-from) keeps its char tokenizer, which a corpus in other
// characters cannot be read with: name the first and the way out, as eval does, not encode's
// advice to build another tokenizer (issue 31, kind 14).
void require_known_characters(const Tokenizer& tokenizer, const Corpus& corpus, bool resumed) {
  const auto* chars = dynamic_cast<const CharTokenizer*>(&tokenizer);
  if (chars == nullptr) return;
  if (const auto unknown = chars->first_unknown(corpus.text))
    throw std::invalid_argument(
        "corpus " + corpus.name + " has characters that the char tokenizer of the model " +
        (resumed ? "resumed" : "in --init-from") + " lacks (the first, " +
        nn::describe_code_point(unknown->code_point) + ", is character " +
        std::to_string(unknown->position) + "; its vocabulary has " +
        std::to_string(chars->vocab_size()) +
        "): the model reads only the characters it was trained with; pass a corpus written "
        "in them, or train a new model" +
        (resumed ? std::string() : std::string(" (without --init-from)")));
}

}  // namespace

std::unique_ptr<TrainingRun> start(const RunRequest& rq, const Communicator& comm,
                                   std::ostream& rank_log) {
  // Rank 0 alone tells what it does (a stream without a buffer writes nothing).
  std::ostream quiet(nullptr);
  std::ostream& log = comm.is_root() ? rank_log : quiet;
  SetUpReport report(log);
  std::unique_ptr<TrainingRun> run(new TrainingRun(comm));
  rq.validate();  // before out_dir is made; a run refused later removes the directory it made
  set_threads(rq.threads, comm, report);
  const RunDir dir(rq.run_dir());
  std::optional<RunDirLock> lock;
  claim_run_dir(rq, dir, comm, lock, report);
  run->checkpoint_path_ = dir.checkpoint().string();
  const std::string& ckpt = run->checkpoint_path_;

  // The model's origin: the checkpoint of a resumed run (read first: it names the corpus), the
  // weights --init-from names, or a new model built for the corpus's tokenizer.
  TrainOptions& options = run->options_;
  std::optional<ResumedRun> resumed;
  if (rq.resume) {
    resumed = read_resumed_run(rq, dir);
    if (comm.is_root()) RunLogs::check_resumable(dir);  // before the corpus: a log it would refuse
    // Any number of ranks resumes the run, as long as they can share its global batch.
    options = resumed_options(resumed->options, rq).on_ranks(comm.size());
  }
  const CorpusSource source = corpus_source(rq, resumed ? &resumed->options : nullptr, log);
  const Corpus corpus = read_corpus(source, ckpt);
  report.corpus(corpus);
  std::optional<Session> continued;
  if (resumed) {
    require_trained_corpus(rq, options, source, corpus, ckpt);
    // The same text under a path given now (the file moved): recorded as that path, so the
    // checkpoints and run.json of the continued run name a file that exists.
    if (!source.recorded) options.corpus = recorded_corpus_spec(source.spec);
    report.resumed(resumed->state.step, ckpt);
    run->resumed_step_ = resumed->state.step;
    continued = std::move(resumed->session);
  } else {
    options = rq.options;
    if (rq.init_from) continued = open_init_from(rq, options, report);
    options.ranks = comm.size();  // as the Trainer records it; the header's global batch
    options.corpus = recorded_corpus_spec(source.spec);
    options.keep_cr = source.options.keep_cr;
    options.corpus_sha256 = sha256_hex(corpus.text);
  }

  // The tokens, the dataset and the baselines (prepare.h), as the page gets them.
  Prepared prepared;
  if (continued) {
    require_known_characters(*continued->tokenizer, corpus, rq.resume);
    prepared = prepare(corpus.text, std::move(continued->model), std::move(continued->tokenizer),
                       options.block_size, report);
  } else {
    const ModelRecipe recipe{rq.model, rq.config,
                             rq.tokenizer.value_or(RunRequest::kDefaultTokenizer), rq.init_seed};
    prepared = prepare_new(corpus.text, recipe, options.block_size, report);
  }
  run->model_ = std::move(prepared.model);
  run->tokenizer_ = std::move(prepared.tokenizer);
  run->data_ = std::move(prepared.data);
  run->baselines_ = prepared.baselines;
  report.option_notes(options);
  report.model(*run->model_);
  report.data(*run->data_, run->baselines_);
  report.plan(options, sequence_length(options.block_size, run->model_->config()),
              kernels::num_threads(), comm.size());

  run->trainer_ =
      std::make_unique<Trainer>(*run->model_, *run->data_, options, run->tokenizer_->kind(),
                                run->tokenizer_->serialize(), dir.path().string(), comm);
  if (resumed) {
    run->trainer_->restore(resumed->state);
    resumed.reset();  // the optimizer holds its own copy of the moments now: free these (two
                      // model sizes)
  }
  // Written by the trainer once the ranks agree: a run refused before its first step leaves none.
  run->trainer_->write_on_start(RunDir::kBaselines, run->baselines_.csv());
  if (const std::optional<std::string> config =
          effective_run_config(rq, options, *run->model_, run->tokenizer_->kind(), dir, report))
    run->trainer_->write_on_start(RunDir::kConfig, *config);
  if (lock) run->lock_fd_ = lock->keep();
  return run;
}

TrainingRun::~TrainingRun() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock on the run directory
}

int TrainingRun::train(std::ostream& log, std::ostream& err, const std::atomic<int>* stop) {
  trainer_->stop_on(stop);
  try {
    result_ = trainer_->run(log);
    return 0;
  } catch (const Interrupted& e) {  // every rank at the same step, the checkpoint written
    if (comm_.is_root()) {
      const std::filesystem::path dir = std::filesystem::path(checkpoint_path_).parent_path();
      std::string message = "\nattograd: " + std::string(e.what());
      if (trainer_->last_saved_step() == e.step())
        message += "; its checkpoint is saved: " + checkpoint_path_ +
                   "\nresume with: attograd train --out " + shell_quoted(dir.string()) +
                   " --resume\n";
      else
        message += "; no checkpoint was written (no output directory)\n";
      err << message << std::flush;
    }
    comm_.barrier();
    return e.exit_code();
  } catch (const CollectiveError& e) {
    // Every rank meets it at the same step (the loss, the gradients, the evaluation and the
    // replica checks are reduced before they are judged): rank 0 speaks for all, and the others
    // wait at a barrier until it has, since mpirun ends the job as soon as one rank exits
    // non-zero.
    if (comm_.is_root()) err << failure_report(e) << std::flush;
    comm_.barrier();
    return e.exit_code();
  } catch (const std::exception& e) {
    if (comm_.size() == 1) throw;
    // An error this rank alone meets while the others train would leave them waiting at the
    // next collective for ever: end them all (rank 0's last checkpoint was written atomically,
    // so it is intact).
    err << comm_.rank_error(e.what()) << std::flush;
    comm_.abort(2);
  }
}

std::string TrainingRun::failure_report(const CollectiveError& e) const {
  std::string message = "attograd: error: " + std::string(e.what()) + "\n";
  // Only a checkpoint of this run is worth naming: save() writes none with a non-finite
  // parameter, and run() none after a non-finite evaluation.
  if (const std::optional<int64_t> good =
          trainer_->last_saved_step() ? trainer_->last_saved_step() : resumed_step_)
    return message + "the last checkpoint, step " + std::to_string(*good) +
           (dynamic_cast<const NonFiniteLoss*>(&e) ? " (all parameters finite)" : "") +
           ", is untouched: " + checkpoint_path_ + "\n";
  return message + "no checkpoint of this run was written" +
         (std::filesystem::exists(checkpoint_path_)
              ? " (" + checkpoint_path_ + " is from an earlier run)"
              : std::string()) +
         "\n";
}

}  // namespace attograd::gpt
