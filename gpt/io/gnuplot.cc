#include "gpt/io/gnuplot.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "gpt/io/subprocess.h"
#include "nn/io/atomic_file.h"
#include "nn/io/utf8.h"

namespace attograd::gpt {

namespace fs = std::filesystem;

namespace {

// The file of texts in the private directory: "index byte" per line.
constexpr const char* kTextsFile = "texts.dat";

void write_private(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush())
    throw std::runtime_error("cannot write the temporary " + path.string() +
                             " for gnuplot (is the disk full, or $TMPDIR not writable?)");
}

// Whether a drawn file is whole: non-empty and ending as its format ends. gnuplot exits 0 after
// a failed write (a full disk), so its status alone would pass an empty or cut-off file.
std::string incomplete_reason(const std::string& bytes, std::optional<uintmax_t> size,
                              const std::string& ext) {
  if (!size) return "is missing";
  if (*size == 0) return "is empty";
  if (ext == "png") {
    static const std::string kIend("\0\0\0\0IEND\xae\x42\x60\x82", 12);  // PNG's last chunk
    if (!bytes.ends_with(kIend))
      return "is cut off (" + std::to_string(*size) + " bytes, no IEND chunk)";
  } else {
    std::string_view tail(bytes);
    while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back())))
      tail.remove_suffix(1);
    if (!tail.ends_with("</svg>"))
      return "is cut off (" + std::to_string(*size) + " bytes, no </svg>)";
  }
  return "";
}

}  // namespace

GnuplotJob::GnuplotJob() {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / "attograd-gnuplot-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)  // mode 0700: no one else can swap our files
    throw std::runtime_error("cannot create a temporary directory for gnuplot in " + base.string() +
                             " (" + std::strerror(errno) + "); set TMPDIR to a writable directory");
  dir_ = pattern;
}

GnuplotJob::~GnuplotJob() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string GnuplotJob::text(std::string_view s) {
  const int64_t index = ++n_texts_;
  const std::string shown = nn::escape_controls(s);
  for (unsigned char ch : shown)
    (texts_ += std::to_string(index)) += ' ' + std::to_string(static_cast<int>(ch)) + '\n';
  return "S[" + std::to_string(index) + "]";
}

std::string GnuplotJob::data(std::string_view name, std::string_view contents) {
  const bool plain = !name.empty() && name != kTextsFile && name[0] != '.' &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
                     });
  if (!plain || name.starts_with("out"))
    throw std::logic_error("GnuplotJob::data: '" + std::string(name) +
                           "' is not a plain data file name of the program's choice");
  write_private(fs::path(dir_) / name, contents);
  std::string quoted(1, '\'');  // appended, not "'" + name: gcc 12 warns falsely (-Wrestrict)
  (quoted += name) += '\'';
  return quoted;
}

std::string GnuplotJob::output(const std::string& target, const std::string& ext) {
  if (ext != "png" && ext != "svg")
    throw std::logic_error("GnuplotJob::output: unknown format '" + ext + "'");
  const std::string name = "out" + std::to_string(outputs_.size()) + "." + ext;
  outputs_.push_back({name, target, ext});
  return "'" + name + "'";
}

std::string GnuplotJob::script() const {
  std::string s;
  if (n_texts_ > 0) {
    // Rebuild each text from its bytes: S[i] . sprintf("%c", byte), line by line of texts.dat.
    s += "array S[" + std::to_string(n_texts_) + "]\ndo for [i=1:" + std::to_string(n_texts_) +
         "] { S[i] = \"\" }\n";
    if (!texts_.empty())
      s += std::string("stats '") + kTextsFile +
           "' using (S[int($1)] = S[int($1)] . sprintf(\"%c\", int($2)), 0) nooutput\n";
  }
  return s + script_ + "\nunset output\n";  // closes the last file before gnuplot exits
}

bool GnuplotJob::run(const std::string& gnuplot, const std::string& what) {
  if (!texts_.empty()) write_private(fs::path(dir_) / kTextsFile, texts_);
  RunOptions in_private_dir;
  in_private_dir.cwd = dir_;
  const std::optional<ProgramResult> done = run_program({gnuplot}, script(), in_private_dir);
  if (!done) return false;
  // gnuplot's warnings (e.g. "empty x range" for a single evaluation) are noise in a training
  // log; they are shown only when it fails.
  const std::string said = done->last_error_line.empty() ? "" : ": " + done->last_error_line;
  if (WIFSIGNALED(done->status))
    throw std::runtime_error("gnuplot was killed by signal " +
                             std::to_string(WTERMSIG(done->status)) + " while drawing " + what);
  if (WEXITSTATUS(done->status) != 0)
    throw std::runtime_error("gnuplot failed (" + describe_status(*done) + ") to draw " + what +
                             said);
  std::vector<std::unique_ptr<nn::AtomicFile>> drawn;
  for (const Output& o : outputs_) {
    const fs::path file = fs::path(dir_) / o.name;
    std::error_code ec;
    const uintmax_t size = fs::file_size(file, ec);
    std::string bytes;
    if (!ec) {
      std::ifstream in(file, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string why =
        incomplete_reason(bytes, ec ? std::nullopt : std::optional(size), o.ext);
    const fs::path target = o.target;
    if (!why.empty())
      throw std::runtime_error("gnuplot exited 0 but " + target.filename().string() + " " + why +
                               " in " + target.parent_path().string() +
                               " (is the disk full?); the previous plots are untouched" + said);
    drawn.push_back(std::make_unique<nn::AtomicFile>(o.target));
    drawn.back()->write(bytes);
  }
  // Every output is whole and written beside its target: only now is any target replaced.
  for (const std::unique_ptr<nn::AtomicFile>& file : drawn) file->commit();
  return true;
}

}  // namespace attograd::gpt
