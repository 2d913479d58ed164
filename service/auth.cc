#include "service/auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <random>
#include <string_view>

namespace switchyard::service {
namespace {

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::string RandomToken() {
  std::random_device rd;  // /dev/urandom
  static constexpr char kHex[] = "0123456789abcdef";
  std::string t;
  for (int i = 0; i < 32; ++i) t += kHex[rd() & 0xf];
  return t;
}

Result<std::string> LoadOrCreateToken(const std::string& path) {
  std::ifstream in(path);
  std::string token;
  if (in && std::getline(in, token) && token.size() >= 16) return token;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return Status::Unavailable("cannot create '" + path + "': " + ec.message());
  token = RandomToken();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return Status::Unavailable("cannot write token file '" + path + "'");
  std::string line = token + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::fchmod(fd, 0600);
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  if (!ok) return Status::Unavailable("cannot write token file '" + path + "'");
  return token;
}

Result<Auth> Auth::Create(const v1::ServiceConfig& config, const std::string& data_dir) {
  Auth auth;
  for (const auto& t : config.tenants()) {
    if (t.name().empty()) return Status::InvalidArgument("config: a tenant has no name");
    if (t.token().size() < 16) {
      return Status::InvalidArgument("config: tenant '" + t.name() +
                                     "' needs a token of at least 16 characters");
    }
    if (auth.Tenant(t.name())) {
      return Status::InvalidArgument("config: tenant '" + t.name() + "' is listed twice");
    }
    auth.tenants_.push_back(t);
  }
  if (auth.tenants_.empty()) {
    auth.default_token_path_ = data_dir + "/tokens/default";
    SY_ASSIGN_OR_RETURN(std::string token, LoadOrCreateToken(auth.default_token_path_));
    v1::TenantConfig t;
    t.set_name("default");
    t.set_token(token);
    auth.tenants_.push_back(t);
  }
  if (!config.admin_token().empty()) {
    auth.admin_token_ = config.admin_token();
  } else {
    SY_ASSIGN_OR_RETURN(auth.admin_token_, LoadOrCreateToken(data_dir + "/tokens/admin"));
  }
  return auth;
}

std::optional<Principal> Auth::Authenticate(const std::string& header) const {
  // "Bearer" 1*SP token; the scheme is case-insensitive (RFC 7235 section 2.1).
  static constexpr std::string_view kBearer = "bearer";
  if (header.size() <= kBearer.size() || header[kBearer.size()] != ' ') return std::nullopt;
  for (size_t i = 0; i < kBearer.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kBearer[i]) return std::nullopt;
  }
  size_t start = header.find_first_not_of(' ', kBearer.size());
  if (start == std::string::npos) return std::nullopt;  // no token
  std::string token = header.substr(start);
  if (ConstantTimeEquals(token, admin_token_)) return Principal{"", true};
  for (const auto& t : tenants_) {
    if (ConstantTimeEquals(token, t.token())) return Principal{t.name(), false};
  }
  return std::nullopt;
}

const v1::TenantConfig* Auth::Tenant(const std::string& name) const {
  for (const auto& t : tenants_) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

}  // namespace switchyard::service
