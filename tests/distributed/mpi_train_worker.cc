// One rank of a data-parallel run for distributed_test: trains a GPT on a small synthetic corpus
// for 20 AdamW steps with Communicator::world() (so the same program runs alone or under
// mpirun), and rank 0 writes every step's loss, the final evaluation and every parameter, each
// to 17 significant digits, to <out>.
//
//   mpi_train_worker <f32|f64> <femto|small> <B per rank> <out>
//
// small is 2 layers, n_embd 32. Exit 0 on success, 1 with a message on stderr otherwise.
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include "gpt/char_tokenizer.h"
#include "gpt/distributed.h"
#include "gpt/trainer.h"

using namespace attograd;
using namespace attograd::gpt;

int main(int argc, char** argv) {
  try {
    if (argc != 5) throw std::invalid_argument("usage: mpi_train_worker f32|f64 femto|small B out");
    const DType dtype = std::string(argv[1]) == "f64" ? DType::f64 : DType::f32;
    const Communicator& comm = Communicator::world();
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
    c.dropout = 0;
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
    Trainer trainer(model, data, o, "char", "", "", comm);
    std::string out = "ranks " + std::to_string(comm.size()) + "\n";
    char buf[64];
    for (int step = 0; step < o.max_steps; ++step) {
      std::snprintf(buf, sizeof buf, "loss %.17g\n", trainer.train_step());
      out += buf;
    }
    const EvalResult r = trainer.evaluate();
    std::snprintf(buf, sizeof buf, "val %.17g\n", r.val_loss);
    out += buf;
    const bool same = comm.all_equal(fingerprint(model.arena().params()));
    out += std::string("replicas ") + (same ? "equal" : "differ") + "\n";
    for (double p : model.arena().params().to_vector()) {
      std::snprintf(buf, sizeof buf, "param %.17g\n", p);
      out += buf;
    }
    if (comm.is_root()) std::ofstream(argv[4]) << out;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "mpi_train_worker: " << e.what() << "\n";
    return 1;
  }
}
