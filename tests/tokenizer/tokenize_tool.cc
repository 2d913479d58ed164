// sy_tokenize_tool: the tokenizer (tokenizer/bpe_tokenizer.h) as a line-oriented filter, for
// the parity test against the reference JS implementation (tests/node/
// tokenizer_parity_test.mjs) and for looking at encodings by hand.
//
//   sy_tokenize_tool run DIR    one answer line per input line on stdin:
//       a JSON string, or {"text": ..., "split_special": bool}: encoded, a JSON array of
//       ids (or {"error": "..."});
//       a JSON array of ids, or {"ids": [...], "skip_special": bool, "cleanup": bool}:
//       decoded, a JSON string
//   sy_tokenize_tool info DIR   stdout: the metadata as one JSON object
// DIR: a checkpoint directory or a tokenizer.json file. Exit status 1 when loading fails.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "tokenizer/bpe_tokenizer.h"

namespace {

using nlohmann::json;
using switchyard::tokenizer::BpeTokenizer;

json EncodeLine(const BpeTokenizer& tok, const json& in) {
  switchyard::tokenizer::EncodeOptions opt;
  const json* text = &in;
  if (in.is_object()) {
    text = &in.at("text");
    opt.split_special_tokens = in.value("split_special", false);
  }
  auto ids = tok.Encode(text->get_ref<const std::string&>(), opt);
  if (!ids.ok()) return json{{"error", ids.status().ToString()}};
  return json(*ids);
}

json DecodeLine(const BpeTokenizer& tok, const json& in) {
  switchyard::tokenizer::DecodeOptions opt;
  const json* ids = &in;
  if (in.is_object()) {
    ids = &in.at("ids");
    opt.skip_special_tokens = in.value("skip_special", false);
    opt.clean_up_tokenization_spaces = in.value("cleanup", false);
  }
  return json(tok.Decode(ids->get<std::vector<int32_t>>(), opt));
}

json Info(const BpeTokenizer& tok) {
  const auto& md = tok.metadata();
  json added = json::array();
  for (const auto& t : md.added_tokens) {
    added.push_back({{"id", t.id}, {"content", t.content}, {"special", t.special}});
  }
  return {{"vocab_size", md.vocab_size},
          {"bos_id", md.bos_id},
          {"eos_ids", md.eos_ids},
          {"pad_id", md.pad_id},
          {"add_bos_token", md.add_bos_token},
          {"model_max_length", md.model_max_length},
          {"chat_template_bytes", md.chat_template.size()},
          {"added_tokens", added}};
}

int Usage() {
  std::fprintf(stderr, "usage: sy_tokenize_tool run|info DIR < lines\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return Usage();
  const std::string mode = argv[1];
  if (mode != "run" && mode != "info") return Usage();
  auto tok = BpeTokenizer::Load(argv[2]);
  if (!tok.ok()) {
    std::fprintf(stderr, "sy_tokenize_tool: %s\n", tok.status().ToString().c_str());
    return 1;
  }
  if (mode == "info") {
    std::cout << Info(**tok).dump() << "\n";
    return 0;
  }
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    json out;
    try {
      const json in = json::parse(line);
      const bool decode = in.is_array() || (in.is_object() && in.contains("ids"));
      out = decode ? DecodeLine(**tok, in) : EncodeLine(**tok, in);
    } catch (const json::exception& e) {
      out = json{{"error", std::string("bad input line: ") + e.what()}};
    }
    std::cout << out.dump() << "\n";
  }
  return 0;
}
