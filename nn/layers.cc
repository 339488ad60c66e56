#include "nn/layers.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <typeinfo>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/size_math.h"

namespace attograd::nn {

namespace {
void require_positive(int64_t v, const char* what) {
  if (v <= 0)
    throw std::invalid_argument(std::string(what) + " must be positive, got " + std::to_string(v));
}

// Parameter initialisers (Module::register_parameter): they may run later, when the model's
// ParameterArena is allocated, so they hold the generator by reference and the rest by value.
std::function<void(Tensor&)> normal_init(Generator& gen, double std) {
  return [&gen, std](Tensor& p) { p.normal_(gen, std); };
}
// U(-bound, bound), element by element in row-major order.
std::function<void(Tensor&)> uniform_init(Generator& gen, double bound) {
  return [&gen, bound](Tensor& p) {
    p.copy_from(Tensor::uniform(p.shape(), gen, -bound, bound, p.dtype()));
  };
}
std::function<void(Tensor&)> constant_init(double value) {
  return [value](Tensor& p) { p.fill_(value); };
}
// Linear's check of its input, for forward and forward_gelu.
void check_linear_input(const Tensor& x, const Tensor& weight) {
  if (x.dim() < 1 || x.size(-1) != weight.size(1))
    throw std::invalid_argument("Linear: expected input (..., " + std::to_string(weight.size(1)) +
                                "), got " + shape_str(x.shape()));
}

}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, bool has_bias, DType dtype)
    : Linear(in_features, out_features, has_bias, default_generator(), dtype) {}

Linear::Linear(int64_t in_features, int64_t out_features, bool has_bias, Generator& gen,
               DType dtype) {
  require_positive(in_features, "Linear: in_features");
  require_positive(out_features, "Linear: out_features");
  // torch's reset_parameters: kaiming_uniform_(a = sqrt(5)) on W, whose bound
  // sqrt(2 / (1 + a²)) * sqrt(3 / fan_in) is 1 / sqrt(fan_in), and the bias U(±1 / sqrt(fan_in)).
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight =
      register_parameter("weight", {out_features, in_features}, dtype, uniform_init(gen, bound));
  if (has_bias) bias = register_parameter("bias", {out_features}, dtype, uniform_init(gen, bound));
}

Linear::Linear(int64_t in_features, int64_t out_features, bool has_bias, Generator& gen,
               DType dtype, double init_std) {
  require_positive(in_features, "Linear: in_features");
  require_positive(out_features, "Linear: out_features");
  weight =
      register_parameter("weight", {out_features, in_features}, dtype, normal_init(gen, init_std));
  if (has_bias) bias = register_parameter("bias", {out_features}, dtype, constant_init(0));
}

Tensor Linear::forward(const Tensor& x) const {
  check_linear_input(x, weight);
  return linear(x, weight, bias);
}

Tensor Linear::forward_gelu(const Tensor& x) const {
  check_linear_input(x, weight);
  return linear_gelu(x, weight, bias);
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen, DType dtype,
                     double init_std) {
  require_positive(num_embeddings, "Embedding: num_embeddings");
  require_positive(embedding_dim, "Embedding: embedding_dim");
  weight = register_parameter("weight", {num_embeddings, embedding_dim}, dtype,
                              normal_init(gen, init_std));
}

Tensor Embedding::forward(const Tensor& ids) const { return embedding(weight, ids); }

LayerNorm::LayerNorm(int64_t C, DType dtype, bool has_bias, double eps_) : eps(eps_) {
  require_positive(C, "LayerNorm: C");
  weight = register_parameter("weight", {C}, dtype, constant_init(1));
  // GPT-2 always has the bias; with bias = false a constant zero beta stands in (not trained).
  bias = has_bias ? register_parameter("bias", {C}, dtype, constant_init(0))
                  : Tensor::zeros({C}, dtype);
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps); }

Dropout::Dropout(double p_, Generator* gen) : p(p_), gen_(gen) {
  if (!(p >= 0 && p < 1))
    throw std::invalid_argument("Dropout: p must be in [0, 1), got " + std::to_string(p));
}

Tensor Dropout::forward(const Tensor& x) const {
  if (!is_training() || p == 0) return x;
  return dropout(x, p, true, *gen_);
}

MLP::MLP(int64_t n_embd, bool bias, double p, double proj_init_std, Generator& gen,
         Generator* dropout_gen, DType dtype) {
  const int64_t hidden = checked_mul<int64_t>(4, n_embd, "MLP: hidden width 4 * n_embd");
  c_fc = register_module("c_fc",
                         std::make_shared<Linear>(n_embd, hidden, bias, gen, dtype, kGpt2InitStd));
  c_proj = register_module(
      "c_proj", std::make_shared<Linear>(hidden, n_embd, bias, gen, dtype, proj_init_std));
  drop = register_module("dropout", std::make_shared<Dropout>(p, dropout_gen));
}

Tensor MLP::forward(const Tensor& x) const {
  // c_fc and GELU as one op (linear_gelu: the same values, GELU applied inside the product and
  // its slope saved for the backward) when c_fc is a plain Linear without hooks. Hooks must see
  // c_fc's own output, and a subclass of Linear put in c_fc (a LoRA adapter, a quantized layer)
  // must run its own forward, which forward_gelu would bypass: those run apart, through
  // operator(). Every other layer goes through operator(), so its hooks run either way.
  const Linear& fc = *c_fc;  // named first: typeid of an expression is evaluated (clang warns)
  const bool fused = typeid(fc) == typeid(Linear) && !fc.has_hooks();
  const Tensor h = fused ? c_fc->forward_gelu(x) : gelu((*c_fc)(x));
  return (*drop)((*c_proj)(h));
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Dropout* attn_dropout, Tensor* weights) {
  if (q.dim() < 2 || k.dim() != q.dim() || v.dim() != q.dim() || k.size(-1) != q.size(-1) ||
      v.size(-2) != k.size(-2))
    throw std::invalid_argument(
        "scaled_dot_product_attention: expected q (..., Tq, d_k), k (..., Tk, d_k), "
        "v (..., Tk, d_v), got q " +
        shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " + shape_str(v.shape()));
  const double d_k = static_cast<double>(q.size(-1));
  // Dividing by sqrt(d_k) keeps the scores' variance near 1 whatever the head size, so the
  // softmax does not saturate (Vaswani et al. 2017, footnote 4).
  const Tensor scores = mul_scalar(matmul(q, transpose(k, -2, -1)), 1.0 / std::sqrt(d_k));
  Tensor att = causal_softmax(scores);
  if (weights != nullptr) *weights = att;
  if (attn_dropout != nullptr) att = (*attn_dropout)(att);
  return matmul(att, v);
}

Tensor apply_rope(const Tensor& x, int64_t pos_offset) {
  const int64_t T = x.size(-2), HS = x.size(-1);
  if (HS % 2 != 0)
    throw std::invalid_argument("apply_rope: head_dim must be even, got " + std::to_string(HS));
  const int64_t half = HS / 2;
  // cos and sin (T, HS/2), computed in double and written straight into tensors from the
  // storage cache: no staging vectors, so a RoPE training step allocates nothing.
  Tensor c = Tensor::empty({T, half}, x.dtype()), s = Tensor::empty({T, half}, x.dtype());
  dispatch_floating(x.dtype(), "apply_rope", [&]<typename U>() {
    U* cp = c.data<U>();
    U* sp = s.data<U>();
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < half; ++i) {
        const double theta = static_cast<double>(pos_offset + t) *
                             std::pow(10000.0, -2.0 * i / static_cast<double>(HS));
        cp[t * half + i] = static_cast<U>(std::cos(theta));
        sp[t * half + i] = static_cast<U>(std::sin(theta));
      }
  });
  const Tensor x1 = slice(x, -1, 0, half), x2 = slice(x, -1, half, HS);
  // (x1, x2) -> (x1 cos - x2 sin, x1 sin + x2 cos): a rotation of each pair by theta.
  return concat({sub(mul(x1, c), mul(x2, s)), add(mul(x1, s), mul(x2, c))}, -1);
}

Tensor sinusoidal_table(int64_t T, int64_t C, DType dtype) {
  require_positive(T, "sinusoidal_table: T");
  require_positive(C, "sinusoidal_table: C");
  std::vector<double> pe(static_cast<size_t>(checked_mul(T, C, "sinusoidal_table: T * C")));
  for (int64_t pos = 0; pos < T; ++pos)
    for (int64_t i = 0; i < C; ++i) {
      const double angle =
          static_cast<double>(pos) /
          std::pow(10000.0, static_cast<double>(i - i % 2) / static_cast<double>(C));
      pe[pos * C + i] = i % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  return Tensor::from_vector(pe, {T, C}, dtype);
}

void LayerKVCache::reserve(int64_t B, int64_t NH, int64_t capacity, int64_t HS, DType dtype) {
  require_positive(B, "LayerKVCache: B");
  require_positive(NH, "LayerKVCache: NH");
  require_positive(capacity, "LayerKVCache: capacity");
  require_positive(HS, "LayerKVCache: HS");
  if (dtype == DType::i64)
    throw std::invalid_argument("LayerKVCache: the buffers must be f32 or f64, got i64");
  const Shape shape{B, NH, capacity, HS};
  if (k_buffer_.defined() && k_buffer_.shape() == shape && k_buffer_.dtype() == dtype) return;
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : shape)
    bytes = checked_mul(bytes, d,
                        [&] { return "LayerKVCache: bytes of the buffers " + shape_str(shape); });
  k_buffer_ = v_buffer_ = Tensor();  // give the old pair back before taking the new one
  k_buffer_ = Tensor::empty(shape, dtype);
  v_buffer_ = Tensor::empty(shape, dtype);
  length_ = 0;
}

void LayerKVCache::append(const Tensor& k_new, const Tensor& v_new) {
  if (!k_buffer_.defined())
    throw std::logic_error("LayerKVCache: reserve() the buffers before the first append");
  const Shape& buf = k_buffer_.shape();  // (B, NH, capacity, HS)
  const DType dtype = k_buffer_.dtype();
  auto fits = [&](const Tensor& t) {
    return t.defined() && t.dtype() == dtype && t.dim() == 4 && t.size(0) == buf[0] &&
           t.size(1) == buf[1] && t.size(3) == buf[3] && t.shape() == k_new.shape();
  };
  if (!fits(k_new) || !fits(v_new))
    throw std::invalid_argument(
        std::string("LayerKVCache: expected new keys and values ") + dtype_name(dtype) + " (" +
        std::to_string(buf[0]) + ", " + std::to_string(buf[1]) + ", T, " + std::to_string(buf[3]) +
        ") like the buffers, got k " + (k_new.defined() ? shape_str(k_new.shape()) : "undefined") +
        ", v " + (v_new.defined() ? shape_str(v_new.shape()) : "undefined"));
  const int64_t NH = buf[1], cap = buf[2], HS = buf[3], T = k_new.size(2);
  if (length_ + T > cap)
    throw std::length_error("LayerKVCache: " + std::to_string(T) + " new positions after " +
                            std::to_string(length_) + " cached exceed its capacity " +
                            std::to_string(cap) +
                            " (clear() it and rebuild it from the cropped context)");
  // Row (b, h, t) of src goes to row (b, h, length_ + t) of the buffer; src may be any view.
  auto write = [&]<typename E>(const Tensor& src, const Tensor& buffer) {
    const Shape& st = src.strides();
    for (int64_t b = 0; b < buf[0]; ++b)
      for (int64_t h = 0; h < NH; ++h)
        for (int64_t t = 0; t < T; ++t) {
          const E* from = src.data<E>() + b * st[0] + h * st[1] + t * st[2];
          E* to = buffer.data<E>() + ((b * NH + h) * cap + length_ + t) * HS;
          if (st[3] == 1) {
            std::memcpy(to, from, static_cast<size_t>(HS) * sizeof(E));
          } else {
            for (int64_t i = 0; i < HS; ++i) to[i] = from[i * st[3]];
          }
        }
  };
  dispatch_floating(dtype, "LayerKVCache", [&]<typename E>() {
    write.template operator()<E>(k_new, k_buffer_);
    write.template operator()<E>(v_new, v_buffer_);
  });
  // Written through data(): counted, so that a graph that saved keys() or values() (views of
  // these buffers) refuses to backpropagate through the rows changed since.
  k_buffer_.bump_version();
  v_buffer_.bump_version();
  length_ += T;
}

Tensor LayerKVCache::keys() const {
  return k_buffer_.defined() ? slice(k_buffer_, 2, 0, length_) : Tensor();
}
Tensor LayerKVCache::values() const {
  return v_buffer_.defined() ? slice(v_buffer_, 2, 0, length_) : Tensor();
}

CausalSelfAttention::CausalSelfAttention(int64_t n_embd_, int64_t n_head_, bool bias, double p,
                                         bool rope_, double proj_init_std, Generator& gen,
                                         Generator* dropout_gen, DType dtype)
    : n_embd(n_embd_), n_head(n_head_), rope(rope_) {
  require_positive(n_head, "CausalSelfAttention: n_head");
  if (n_embd % n_head != 0)
    throw std::invalid_argument("CausalSelfAttention: n_head " + std::to_string(n_head) +
                                " must divide n_embd " + std::to_string(n_embd));
  if (rope && (n_embd / n_head) % 2 != 0)
    throw std::invalid_argument(
        "CausalSelfAttention: RoPE rotates channel pairs, so head_dim = n_embd / n_head = " +
        std::to_string(n_embd / n_head) + " must be even");
  c_attn = register_module(
      "c_attn", std::make_shared<Linear>(
                    n_embd, checked_mul<int64_t>(3, n_embd, "CausalSelfAttention: 3 * n_embd"),
                    bias, gen, dtype, kGpt2InitStd));
  c_proj = register_module(
      "c_proj", std::make_shared<Linear>(n_embd, n_embd, bias, gen, dtype, proj_init_std));
  attn_dropout = register_module("attn_dropout", std::make_shared<Dropout>(p, dropout_gen));
  resid_dropout = register_module("resid_dropout", std::make_shared<Dropout>(p, dropout_gen));
}

Tensor CausalSelfAttention::forward(const Tensor& x, LayerKVCache* cache, Tensor* weights) const {
  if (x.dim() != 3 || x.size(2) != n_embd)
    throw std::invalid_argument("CausalSelfAttention: expected x (B, T, " + std::to_string(n_embd) +
                                "), got " + shape_str(x.shape()));
  const int64_t B = x.size(0), T = x.size(1), HS = n_embd / n_head;
  const int64_t past = cache != nullptr ? cache->length() : 0;  // positions already cached
  const Tensor qkv = (*c_attn)(x);                              // (B, T, 3C): q, k, v side by side
  // The fused ops compute exactly scaled_dot_product_attention (tests/nn/layers_test.cc) without
  // storing the (T, T) weights; dropout on those weights needs them, and so does a caller who
  // asks for them, so both take the long way.
  const bool weight_dropout = attn_dropout->is_training() && attn_dropout->p > 0;
  const bool unfused = weight_dropout || weights != nullptr;
  if (!rope && cache == nullptr && !unfused) {
    // The common case, GPT-2's: one op reads the heads of qkv in place and returns them merged.
    return (*resid_dropout)((*c_proj)(causal_attention_qkv(qkv, n_head)));
  }
  // Otherwise the heads are made explicit: (B, T, 3C) -> q, k, v each (B, T, C) ->
  // (B, T, NH, HS) -> (B, NH, T, HS), all views of qkv
  auto heads = [&](int64_t part) {  // part 0, 1, 2: q, k, v, each a view of qkv
    return transpose(
        reshape(slice(qkv, -1, part * n_embd, (part + 1) * n_embd), {B, T, n_head, HS}), 1, 2);
  };
  Tensor q = heads(0), k = heads(1), v = heads(2);
  if (rope) {
    q = apply_rope(q, past);
    k = apply_rope(k, past);
  }
  if (cache != nullptr) {
    if (grad_enabled())
      throw std::logic_error(
          "CausalSelfAttention: a KV cache is for inference and cuts the graph; "
          "run the forward under NoGradGuard");
    // Write the new keys and values in place after the cached ones; the new queries then see
    // every cached key through views (B, NH, past + T, HS) of the buffers. The attention offset
    // (key j <= t + Tk - Tq) lines query t up with absolute position past + t.
    cache->append(k, v);
    k = cache->keys();
    v = cache->values();
  }
  const Tensor y = unfused ? scaled_dot_product_attention(
                                 q, k, v, weight_dropout ? attn_dropout.get() : nullptr, weights)
                           : causal_attention(q, k, v);  // (B, NH, T, HS)
  // Re-assemble the heads side by side: (B, NH, T, HS) -> (B, T, NH, HS) -> (B, T, C) (a view
  // for causal_attention's output, which is stored in (B, T, NH, HS) order)
  const Tensor merged = reshape(transpose(y, 1, 2), {B, T, n_embd});
  return (*resid_dropout)((*c_proj)(merged));
}

}  // namespace attograd::nn
