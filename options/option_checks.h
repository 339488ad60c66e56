// The checks every option of attograd's programs goes through (the attograd CLI and
// attention_by_hand): one number parser and one rule for empty values, so that the programs never
// disagree on what "010", "1e3", "inf" or "" means. In namespace cli, the command line's, though
// the floor is options/ below cli/: the lecture's programs use it without standing on the CLI.
#pragma once

#include <CLI/CLI.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpt/model/field_ranges.h"

namespace attograd::cli {

/// Option checks with short messages ("--lr: must be a finite number > 0, got 0"): CLI11's
/// PositiveNumber prints its range as 0 to 1.8e308 written out in full. These are for
/// floating-point options; an integer option takes integer_in, a seed kSeed.
extern const CLI::Validator kPositive;     // a finite number > 0
extern const CLI::Validator kNonNegative;  // a finite number >= 0

/// A finite floating-point number in [min, max], or (min, max] with min_open.
CLI::Validator number_in(double min, double max, bool min_open = false);
/// A finite floating-point number in r ("--dropout: must be a finite number in [0, 1), got 1";
/// with no upper bound "> 0" or ">= 0"), the words gpt::check_range uses. Like kPositive and
/// kNonNegative, it refuses text that CLI11 would store as another double than the one checked
/// (CLI11 rounds twice, through a long double): "0.99999999999999994448884876874" is checked
/// as 0.99999999999999989, and stored it would be 1 ("... lies too close to halfway between
/// two doubles to be read the same way twice; write 0.99999999999999989").
CLI::Validator number_in(gpt::RealRange r);

/// An integer option in [range.min, range.max] ("--n-layer: must be an integer in [1, 1024],
/// got 1000000000"; range.why, when set, follows the range). Only decimal digits with an optional
/// minus sign are read: "1.5", "1e3", "0x10" and values out of range are refused, never
/// rounded, clamped or wrapped; so is "010", which CLI11 (strtoll in base 0) would read as
/// octal 8. --help shows the range (INT in [1, 1024]).
CLI::Validator integer_in(gpt::IntRange range);

/// A seed: an integer in [0, 2^64 - 1] checked as integer_in checks one; "-1" is refused, not
/// wrapped to 2^64 - 1.
extern const CLI::Validator kSeed;

/// The text must be one of `names`: CLI::IsMember's check and messages ("--model: trigram not in
/// {gpt,bigram,average}"), with the text echoed escaped (a tab as \t, U+0085 as \u0085), never
/// raw: a control character printed raw could break the line or move the cursor (issue 31).
CLI::Validator one_of(std::vector<std::string> names);

/// A path the command writes to (--out, --cache-dir, --markdown): one without control characters
/// ("--out: the path \"r\nrun\" holds a control character (U+000A); choose a name without
/// newlines, tabs or other control characters"). Such a name is almost always a mistake, and
/// one that printed logs and messages cannot show.
extern const CLI::Validator kOutputPath;

/// Every option of `app` and of its subcommands (recursively) that takes a value refuses an
/// empty one ("--checkpoint: is empty: give a value, or leave the option out for its default"):
/// `tokenize --checkpoint ''` once fell back silently to GPT-2's BPE. Call it once, after every
/// option is added.
void refuse_empty_values(CLI::App& app);

/// Throws std::invalid_argument when the values of the repeatable option `option` hold one value
/// twice ("--n 3 is given twice; each N is one row of the table: give it once"), `why` saying
/// what a repeat would only repeat. The options that take one value take the last of several
/// (a script's default overridden); a list option's repeat is a slip, refused rather than
/// printed twice or silently dropped.
template <class T>
void refuse_repeated(const std::vector<T>& values, const std::string& option,
                     const std::string& why) {
  for (size_t i = 0; i < values.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (values[j] == values[i]) {
        std::ostringstream value;
        value << values[i];
        throw std::invalid_argument(option + " " + value.str() + " is given twice; " + why +
                                    ": give it once");
      }
}

/// Another program's name for an option, as a flag, with the flag it is here:
/// {"--max-iters", "--steps"} (nanoGPT's max_iters). field_options.h's nanogpt_flags lists the
/// field tables' (Field::nanogpt_name).
struct FlagAlias {
  std::string theirs;
  std::string ours;
};

/// For an unknown option `arg` ("--batch_size=16", "--temprature") of `command`: the option
/// it most likely meant, by a user of nanoGPT's or argparse's spelling (underscores for dashes;
/// `nanogpt`'s names for the options `command` has, " (did you mean --steps, attograd's name for
/// nanoGPT's max_iters?)") or a typo (at most 2 letters off), as " (did you mean --batch-size?)";
/// "" when none is close.
std::string did_you_mean(const CLI::App& command, const std::string& arg,
                         const std::vector<FlagAlias>& nanogpt = {});

}  // namespace attograd::cli
