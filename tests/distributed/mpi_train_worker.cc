// One rank of a data-parallel run for distributed_test: trains a GPT on a small synthetic corpus
// for 20 AdamW steps with Communicator::world() (so the same program runs alone or under
// mpirun). Rank 0 writes to <out>, each number to 17 significant digits:
//   ranks N / n_embd C / loss L (every step) / val V / replicas equal|differ /
//   grad_max G (the largest |gradient| of the last step) /
//   key_bias_grad_max K (the same over the attention's key biases) /
//   param P NAME (every parameter, in arena order, with its tensor's name)
//
//   mpi_train_worker <f32|f64> <femto|small> <B per rank> <out> [nan|diverge|dropout]
//
// small is 2 layers, n_embd 32. The last argument plants a fault on rank 1 after 5 steps: `nan`
// makes its wte NaN (so only rank 1's loss is NaN); `diverge` moves its wte by 1e-3, which
// Trainer::check_replicas must catch. `dropout` trains with
// dropout 0.2 and writes each rank's next dropout draw to <out>.rank<R>.dropout. Exit 0 on success;
// 1 with "mpi_train_worker: rank R of N: <error>" on stderr and in <out>.rank<R>.error otherwise.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>

#include "autograd/ops.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/train/distributed.h"
#include "gpt/train/trainer.h"
#include "tests/distributed/key_bias.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::is_key_bias;

int main(int argc, char** argv) {
  const Communicator* comm = nullptr;
  try {
    if (argc != 5 && argc != 6)
      throw std::invalid_argument(
          "usage: mpi_train_worker f32|f64 femto|small B out [nan|diverge|dropout]");
    const DType dtype = std::string(argv[1]) == "f64" ? DType::f64 : DType::f32;
    const std::string fault = argc == 6 ? argv[5] : "";
    comm = &Communicator::world();
    std::string text;
    for (int i = 0; i < 300; ++i)
      text += (i % 3 == 0) ? "the cat sat. " : (i % 3 == 1) ? "a dog ran! " : "we sing; ";
    const CharTokenizer tok = CharTokenizer::from_text(text);
    GPTConfig c = preset("femto");
    if (std::string(argv[2]) == "small") {
      c = preset("pico");
      c.n_layer = 2;
      c.n_head = 4;
      c.n_embd = 32;
      c.block_size = 16;
    }
    c.vocab_size = tok.vocab_size();
    c.dropout = fault == "dropout" ? 0.2 : 0;
    const Dataset data(tok.encode(text), c.block_size);
    GPT model(c, 5, dtype);
    TrainOptions o;
    o.max_steps = 20;
    o.batch_size = std::stoll(argv[3]);
    o.warmup_steps = 2;
    o.learning_rate = 1e-2;
    o.min_lr = 1e-3;
    o.eval_iters = 3;
    o.seed = 77;
    Trainer trainer(model, data, o, "char", "", "", *comm);
    std::ostringstream out;
    out.precision(17);
    out << "ranks " << comm->size() << "\nn_embd " << c.n_embd << "\n";
    Tensor wte = model.arena().named_parameters().front().second;
    for (int step = 0; step < o.max_steps; ++step) {
      if (step == 5 && comm->rank() == 1 && fault == "nan")
        wte.fill_(std::numeric_limits<double>::quiet_NaN());
      if (step == 5 && fault == "diverge") {
        if (comm->rank() == 1) wte.copy_from(add_scalar(wte, 1e-3));
        trainer.check_replicas();  // as Trainer::run does every log_interval steps: must throw
        throw std::logic_error("Trainer::check_replicas did not notice the replicas differ");
      }
      out << "loss " << trainer.train_step() << "\n";
    }
    if (fault == "dropout") {  // each rank's next dropout draw, to <out>.rank<R>.dropout
      std::ofstream(std::string(argv[4]) + ".rank" + std::to_string(comm->rank()) + ".dropout")
          << std::setprecision(17) << model.dropout_generator().uniform() << "\n";
    }
    // The gradients of the last step are still in the arena.
    double grad_max = 0, key_bias_grad_max = 0;
    for (const auto& [name, p] : model.arena().named_parameters()) {
      const std::vector<double> g = p.grad().to_vector();
      for (size_t i = 0; i < g.size(); ++i) {
        grad_max = std::max(grad_max, std::abs(g[i]));
        if (is_key_bias(name, static_cast<int64_t>(i), c.n_embd))
          key_bias_grad_max = std::max(key_bias_grad_max, std::abs(g[i]));
      }
    }
    out << "grad_max " << grad_max << "\nkey_bias_grad_max " << key_bias_grad_max << "\n";
    out << "val " << trainer.evaluate().val_loss << "\n";
    const bool same = comm->all_equal(fingerprint(model.arena().params()));
    out << "replicas " << (same ? "equal" : "differ") << "\n";
    for (const auto& [name, p] : model.arena().named_parameters())
      for (double v : p.to_vector()) out << "param " << v << " " << name << "\n";
    if (comm->is_root()) std::ofstream(argv[4]) << out.str();
    return 0;
  } catch (const std::exception& e) {
    // Also to <out>.rank<R>.error, which the test reads whole (mpirun interleaves stderr).
    const int rank = comm ? comm->rank() : 0;
    const std::string message = "mpi_train_worker: rank " + std::to_string(rank) + " of " +
                                std::to_string(comm ? comm->size() : 1) + ": " + e.what() + "\n";
    std::cerr << message << std::flush;
    if (argc >= 5)
      std::ofstream(std::string(argv[4]) + ".rank" + std::to_string(rank) + ".error") << message;
    // The planted faults stop every rank at the same point: wait for each to write its file.
    if (comm != nullptr && argc == 6 && std::string(argv[5]) != "dropout") comm->barrier();
    return 1;
  }
}
