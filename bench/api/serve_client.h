// What the proxy bench (openai_proxy_bench.cc) drives `switchyard serve` with: a child
// `switchyard serve` process on a free loopback port with a temporary data dir, and a
// blocking keep-alive HTTP/1.1 client connection to it.
//
// Ownership: a ServeProcess stops its child (SIGTERM) and removes its directory when
// destroyed. Thread-safety: one thread per Connection; a ServeProcess's getters may be read
// from any thread once Start() returned.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace switchyard::bench {

// The environment variable `name` when it is a whole number > 0, else `fallback`.
int EnvInt(const char* name, int fallback);
// `n` random hex digits.
std::string RandomHex(size_t n);
// The `q` quantile of `v` (the value at rank q x size, 0 when empty).
double Quantile(std::vector<double> v, double q);
// User + system CPU seconds this process has used so far.
double SelfCpuSeconds();
// The tokens a `switchyard serve` at `port` has computed in engine steps so far (the sum of
// switchyard_engine_step_tokens_sum in its /metrics, read with `token`; 0 when unread).
double EngineStepTokens(int port, const std::string& token);

struct HttpAnswer {
  int status = 0;
  std::string body;
};

class Connection;
// POSTs `body` to /v1/chat/completions over `conn` with `headers`; sets `ms` to the time the
// whole answer took and returns it parsed (null unless a 200 with a JSON object).
nlohmann::json TimedChat(Connection* conn, const std::string& headers, const nlohmann::json& body,
                         double* ms);

// One keep-alive HTTP/1.1 connection to 127.0.0.1:port (blocking socket). Answers with
// Content-Length, chunked or close-delimited bodies are read whole.
class Connection {
 public:
  explicit Connection(int port) : port_(port) {}
  ~Connection() { Close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // False when no answer came back. A reused connection the server had closed while idle
  // (nothing of the answer read) is retried once on a fresh one. `headers`: whole lines,
  // each ending in CRLF.
  bool Send(const std::string& method, const std::string& target, const std::string& headers,
            const std::string& body, HttpAnswer* out);

 private:
  bool Connect();
  void Close();
  bool SendAll(const std::string& s);
  bool Fill(bool* got_bytes);
  bool Read(HttpAnswer* out, bool* got_bytes);
  bool ReadChunked(HttpAnswer* out, bool* got_bytes);

  int port_;
  int fd_ = -1;
  std::string buf_;
};

// `switchyard serve ARGS --listen 127.0.0.1:<free port> --data-dir <tmp>/data` as a child
// process (output to <tmp>/serve.log), stopped with SIGTERM by the destructor.
class ServeProcess {
 public:
  // Waits up to 60 s for /healthz and the default tenant's token; false (its log on stderr,
  // named `what`) when the server did not start. `token` (16 characters or more): the
  // default tenant's token, written where the server reads it first (several servers that
  // one client reaches with one key); "": the server makes its own.
  bool Start(const std::string& binary, const std::vector<std::string>& args,
             const std::string& what, const std::string& token = "");
  ~ServeProcess();
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& token() const { return token_; }
  // The admin token (its data dir's tokens/admin; "" before Start).
  std::string admin_token() const;

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string token_;
};

}  // namespace switchyard::bench
