// A `switchyard serve` child and a keep-alive HTTP/1.1 client for the proxy bench (see
// serve_client.h).
#include "bench/api/serve_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

#include "bench/common/process.h"

namespace switchyard::bench {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

std::string RandomHex(size_t n) {
  std::random_device rd;
  std::string s;
  while (s.size() < n) s += "0123456789abcdef"[rd() % 16];
  return s;
}

double SelfCpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

nlohmann::json TimedChat(Connection* conn, const std::string& headers, const nlohmann::json& body,
                         double* ms) {
  HttpAnswer r;
  const auto start = std::chrono::steady_clock::now();
  const bool ok = conn->Send("POST", "/v1/chat/completions", headers, body.dump(), &r);
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json answer =
      ok && r.status == 200 ? nlohmann::json::parse(r.body, nullptr, false) : nlohmann::json();
  return answer.is_object() ? answer : nlohmann::json();
}

double EngineStepTokens(int port, const std::string& token) {
  Connection conn(port);
  HttpAnswer r;
  if (!conn.Send("GET", "/metrics", "Authorization: Bearer " + token + "\r\n", "", &r)) return 0;
  double sum = 0;
  size_t at = 0;
  const std::string key = "switchyard_engine_step_tokens_sum";
  while ((at = r.body.find(key, at)) != std::string::npos) {
    const size_t sp = r.body.find(' ', at);
    sum += std::atof(r.body.c_str() + sp + 1);
    at = sp;
  }
  return sum;
}

bool Connection::Send(const std::string& method, const std::string& target,
                      const std::string& headers, const std::string& body, HttpAnswer* out) {
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers +
                    "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool fresh = fd_ < 0;
    if (fresh && !Connect()) return false;
    bool got_bytes = false;
    if (SendAll(req) && Read(out, &got_bytes)) return true;
    Close();
    if (fresh || got_bytes) return false;
  }
  return false;
}

bool Connection::Connect() {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    Close();
    return false;
  }
  buf_.clear();
  return true;
}

void Connection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buf_.clear();
}

bool Connection::SendAll(const std::string& s) {
  for (size_t sent = 0; sent < s.size();) {
    ssize_t n = ::send(fd_, s.data() + sent, s.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool Connection::Fill(bool* got_bytes) {
  char b[16384];
  ssize_t n = ::recv(fd_, b, sizeof(b), 0);
  if (n <= 0) return false;
  buf_.append(b, static_cast<size_t>(n));
  *got_bytes = true;
  return true;
}

bool Connection::Read(HttpAnswer* out, bool* got_bytes) {
  size_t head_end;
  while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos)
    if (!Fill(got_bytes)) return false;
  std::string head = buf_.substr(0, head_end + 2);
  buf_.erase(0, head_end + 4);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (head.size() < 12) return false;
  out->status = std::atoi(head.c_str() + 9);
  out->body.clear();
  bool close = head.find("\r\nconnection: close\r\n") != std::string::npos;
  size_t cl = head.find("\r\ncontent-length:");
  if (cl != std::string::npos) {
    size_t n = std::strtoull(head.c_str() + cl + 17, nullptr, 10);
    while (buf_.size() < n)
      if (!Fill(got_bytes)) return false;
    out->body = buf_.substr(0, n);
    buf_.erase(0, n);
  } else if (head.find("\r\ntransfer-encoding: chunked\r\n") != std::string::npos) {
    if (!ReadChunked(out, got_bytes)) return false;
  } else {
    while (Fill(got_bytes)) {
    }
    out->body = std::move(buf_);
    close = true;
  }
  if (close) Close();
  return true;
}

bool Connection::ReadChunked(HttpAnswer* out, bool* got_bytes) {
  for (;;) {
    size_t eol;
    while ((eol = buf_.find("\r\n")) == std::string::npos)
      if (!Fill(got_bytes)) return false;
    size_t n = std::strtoull(buf_.c_str(), nullptr, 16);
    while (buf_.size() < eol + 2 + n + 2)
      if (!Fill(got_bytes)) return false;
    out->body.append(buf_, eol + 2, n);
    buf_.erase(0, eol + 2 + n + 2);
    if (n == 0) return true;  // no trailers expected
  }
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * double(v.size())))];
}

bool ServeProcess::Start(const std::string& binary, const std::vector<std::string>& args,
                         const std::string& what, const std::string& token) {
  dir_ = std::filesystem::temp_directory_path() / ("sy_bench_proxy_" + RandomHex(8));
  std::filesystem::create_directories(dir_);
  if (!token.empty()) {
    std::filesystem::create_directories(dir_ / "data" / "tokens");
    std::ofstream(dir_ / "data" / "tokens" / "default") << token << "\n";
  }
  port_ = FreeLoopbackPort();
  std::vector<std::string> argv = {binary, "serve"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--listen", "127.0.0.1:" + std::to_string(port_), "--data-dir",
                           (dir_ / "data").string()});
  std::string log = (dir_ / "serve.log").string();
  pid_ = Spawn(argv, log);
  std::filesystem::path token_file = dir_ / "data" / "tokens" / "default";
  for (int i = 0; i < 1200; ++i) {  // 60 s
    HttpAnswer a;
    if (Connection(port_).Send("GET", "/healthz", "Connection: close\r\n", "", &a) &&
        a.status == 200 && std::filesystem::exists(token_file)) {
      std::ifstream(token_file) >> token_;
      if (!token_.empty()) return true;
    }
    if (Exited(pid_)) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::fprintf(stderr, "bench openai_proxy: the %s did not start; its log:\n%s\n", what.c_str(),
               ReadText(log).c_str());
  return false;
}

std::string ServeProcess::admin_token() const {
  std::string t;
  std::ifstream(dir_ / "data" / "tokens" / "admin") >> t;
  return t;
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) Terminate(pid_);
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

}  // namespace switchyard::bench
