// S7's answer (examples/student/bigram.cc), with a dense V x V table: fine for the checks'
// vocabularies (the library's gpt/text/dataset.h counts sparsely, for GPT-2's 50,257 tokens).
#include <cmath>
#include <stdexcept>
#include <string>

#include "examples/student/exercises.h"

namespace attograd::student {

double bigram_cross_entropy(const std::vector<int64_t>& train, const std::vector<int64_t>& val,
                            int64_t vocab_size) {
  if (val.size() < 2)
    throw std::invalid_argument("bigram_cross_entropy: val has " + std::to_string(val.size()) +
                                " token(s), no pair");
  const size_t V = static_cast<size_t>(vocab_size);
  std::vector<double> pairs(V * V, 0.0), starts(V, 0.0);  // count(a, b) and count(a, ·)
  for (size_t i = 1; i < train.size(); ++i) {
    const size_t a = static_cast<size_t>(train[i - 1]), b = static_cast<size_t>(train[i]);
    pairs[a * V + b] += 1;
    starts[a] += 1;  // the last token of train starts no pair
  }
  double loss = 0;
  for (size_t i = 1; i < val.size(); ++i) {
    const size_t a = static_cast<size_t>(val[i - 1]), b = static_cast<size_t>(val[i]);
    loss -= std::log((pairs[a * V + b] + 1) / (starts[a] + static_cast<double>(V)));
  }
  return loss / static_cast<double>(val.size() - 1);  // m tokens make m − 1 pairs
}

}  // namespace attograd::student
