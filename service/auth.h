// Auth: bearer tokens → tenants, plus the admin token.
//
// Tokens come from the service config; when no tenant is configured a `default` tenant
// is created with a random token, printed once at start and written to
// <data-dir>/tokens/default with mode 0600 (reused on the next start). Tokens are
// compared in constant time and never logged.
//
// Thread-safety: immutable after construction; lookups are thread-safe.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "proto/switchyard/v1/api.pb.h"

namespace switchyard::service {

struct Principal {
  std::string tenant;  // empty for the admin principal
  bool admin = false;
};

class Auth {
 public:
  // Builds from the config, generating (or reading back) the default tenant's token and
  // the admin token under `data_dir`/tokens when they are not configured.
  static Result<Auth> Create(const v1::ServiceConfig& config, const std::string& data_dir);

  // "Bearer <token>" → principal; nullopt for a missing or unknown token.
  std::optional<Principal> Authenticate(const std::string& authorization_header) const;
  const std::vector<v1::TenantConfig>& tenants() const { return tenants_; }
  const v1::TenantConfig* Tenant(const std::string& name) const;
  // Where the default tenant's token was written (empty when tenants are configured).
  const std::string& default_token_path() const { return default_token_path_; }
  bool generated_default() const { return !default_token_path_.empty(); }

 private:
  std::vector<v1::TenantConfig> tenants_;
  std::string admin_token_;
  std::string default_token_path_;
};

// A random 32-hex-digit token from the OS entropy source.
std::string RandomToken();
// Reads a token file, or creates it (mode 0600) holding a new random token.
Result<std::string> LoadOrCreateToken(const std::string& path);

}  // namespace switchyard::service
