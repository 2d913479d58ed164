#include "tokenizer/internal/json_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace switchyard::tokenizer::internal {

bool FileExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

Result<std::string> ReadFileBytes(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::NotFound(path + ": not found");
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(path + ": is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(path + ": cannot be read: " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument(path + ": read failed");
  return std::move(buf).str();
}

Result<Json> ReadJsonFile(const std::string& path) {
  SY_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  try {
    return Json::parse(bytes);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(path + ": not valid JSON: " + e.what());
  }
}

Result<std::optional<Json>> ReadOptionalJsonFile(const std::string& path) {
  if (!FileExists(path)) return std::optional<Json>();
  SY_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  return std::optional<Json>(std::move(j));
}

namespace {

std::string Message(std::string_view file, std::string_view path, std::string_view what) {
  std::string m(file);
  if (!path.empty()) m.append(": ").append(path);
  m.append(": ").append(what);
  return m;
}

}  // namespace

Status JsonInvalid(std::string_view file, std::string_view path, std::string_view what) {
  return Status::InvalidArgument(Message(file, path, what));
}

Status JsonUnsupported(std::string_view file, std::string_view path, std::string_view what) {
  return Status::NotSupported(Message(file, path, what));
}

std::string Describe(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

Status ReadBool(const Json& object, const char* key, std::string_view file, std::string_view path,
                bool* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return Status::OK();
  if (!it->is_boolean()) {
    return JsonInvalid(file, std::string(path) + (path.empty() ? "" : ".") + key,
                       "must be true or false, not " + Describe(*it));
  }
  *out = it->get<bool>();
  return Status::OK();
}

}  // namespace switchyard::tokenizer::internal
