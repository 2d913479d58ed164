#include "proto/json.h"

#include <google/protobuf/util/json_util.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace switchyard::proto {

Status ParseJson(std::string_view json, google::protobuf::Message* msg,
                 const JsonParseOptions& options) {
  msg->Clear();
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = options.ignore_unknown_fields;
  auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), msg, opts);
  if (st.ok()) return Status::OK();
  msg->Clear();
  std::string where = options.source.empty() ? std::string("JSON") : std::string(options.source);
  return Status::InvalidArgument(where + " is not a valid " + msg->GetTypeName() + ": " +
                                 std::string(st.message()));
}

Result<std::string> ToJson(const google::protobuf::Message& msg, const JsonPrintOptions& options) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = options.pretty;
  opts.always_print_primitive_fields = options.always_print_primitive_fields;
  opts.preserve_proto_field_names = options.preserve_proto_field_names;
  std::string out;
  auto st = google::protobuf::util::MessageToJsonString(msg, &out, opts);
  if (!st.ok()) {
    return Status::Internal("cannot print " + msg.GetTypeName() +
                            " as JSON: " + std::string(st.message()));
  }
  return out;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    if (err == ENOENT) return Status::NotFound("cannot open '" + path + "': no such file");
    return Status::Unavailable("cannot open '" + path + "': " + std::strerror(err));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Unavailable("error reading '" + path + "'");
  return ss.str();
}

Status ParseJsonFile(const std::string& path, google::protobuf::Message* msg) {
  SY_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  JsonParseOptions opts;
  opts.source = path;
  return ParseJson(text, msg, opts);
}

}  // namespace switchyard::proto
